#include "remote/metrics_poller.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QNetworkRequest>

#include <algorithm>

#include "remote/prometheus_text.h"

namespace lorascope::ui {

namespace {

// "HTTP 401 (authentication): missing or wrong API token ..." from a LoRAX error body (or an
// OpenAI-style one), else the body's start.
QString http_failure(int status, const QByteArray& body) {
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    const QJsonValue e = o.value(QStringLiteral("error"));
    if (!e.isUndefined()) {
        const QString message = e.isObject() ? e.toObject().value(QStringLiteral("message")).toString() : e.toString();
        const QString type = e.isObject() ? e.toObject().value(QStringLiteral("type")).toString()
                                          : o.value(QStringLiteral("error_type")).toString();
        return type.isEmpty() ? QStringLiteral("HTTP %1: %2").arg(status).arg(message)
                              : QStringLiteral("HTTP %1 (%2): %3").arg(status).arg(type, message);
    }
    const QString text = QString::fromUtf8(body.left(160)).simplified();
    return text.isEmpty() ? QStringLiteral("HTTP %1").arg(status) : QStringLiteral("HTTP %1: %2").arg(status).arg(text);
}

}  // namespace

MetricsPoller::MetricsPoller(ServerMetricsModel* model, QObject* parent) : QObject(parent), model_(model) {
    timer_.setSingleShot(true);
    connect(&timer_, &QTimer::timeout, this, &MetricsPoller::poll);
}

MetricsPoller::~MetricsPoller() {
    // No stop(): the model may be gone already (a sibling child of the same window).
    active_ = false;
    if (QNetworkReply* reply = in_flight_) {
        in_flight_ = nullptr;
        reply->abort();
    }
}

void MetricsPoller::start(const QUrl& base_url, const QString& api_token) {
    stop();
    metrics_url_ = base_url;
    metrics_url_.setPath(base_url.path() + QStringLiteral("/metrics"));
    authorization_ = api_token.isEmpty() ? QByteArray() : "Bearer " + api_token.toUtf8();
    active_ = true;
    consecutive_failures_ = 0;
    next_delay_ms_ = interval_ms_;
    clock_.start();
    model_->reset(metrics_url_.toString(QUrl::RemoveUserInfo), interval_ms_);
    poll();
}

void MetricsPoller::stop() {
    const bool was_active = active_;
    active_ = false;
    timer_.stop();
    if (in_flight_) {
        QNetworkReply* reply = in_flight_;
        in_flight_ = nullptr;
        reply->abort();
        reply->deleteLater();
    }
    authorization_.clear();
    if (was_active && model_) model_->stop();
}

void MetricsPoller::setIntervalMs(int ms) {
    interval_ms_ = std::max(50, ms);
    if (consecutive_failures_ == 0) next_delay_ms_ = interval_ms_;
    model_->setIntervalMs(interval_ms_);
    if (active_ && timer_.isActive() && consecutive_failures_ == 0) timer_.start(interval_ms_);
}

void MetricsPoller::poll() {
    if (!active_ || in_flight_) return;
    QNetworkRequest request(metrics_url_);
    request.setRawHeader("Accept", "text/plain; version=0.0.4");
    if (!authorization_.isEmpty()) request.setRawHeader("Authorization", authorization_);
    request.setTransferTimeout(timeout_ms_);
    QNetworkReply* reply = nam_.get(request);
    in_flight_ = reply;
    connect(reply, &QNetworkReply::finished, this, [this, reply] { onReply(reply); });
}

void MetricsPoller::onReply(QNetworkReply* reply) {
    reply->deleteLater();
    if (reply != in_flight_) return;   // stopped or restarted meanwhile
    in_flight_ = nullptr;
    if (!active_) return;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) return failed(ServerMetricsModel::State::HttpError, http_failure(status, reply->readAll()));
    if (reply->error() != QNetworkReply::NoError) {
        // errorString() names the URL and the reason; the token is in a header and never in it.
        const QString why = reply->error() == QNetworkReply::OperationCanceledError
                                ? tr("no answer within %1 ms (timeout)").arg(timeout_ms_)
                                : reply->errorString();
        return failed(ServerMetricsModel::State::Unreachable, why);
    }
    const QByteArray body = reply->readAll();
    const prometheus::Exposition e = prometheus::parse(std::string_view(body.constData(), size_t(body.size())));
    const ServerReading reading = readServerMetrics(e);
    model_->addReading(double(clock_.elapsed()) / 1000.0, reading);
    if (reading.flavor == ServerFlavor::Unknown) {
        ++consecutive_failures_;
        next_delay_ms_ = std::min(kMaxBackoffMs, interval_ms_ << std::min(consecutive_failures_, 10));
    } else {
        consecutive_failures_ = 0;
        next_delay_ms_ = interval_ms_;
    }
    scheduleNext(next_delay_ms_);
}

void MetricsPoller::failed(ServerMetricsModel::State state, const QString& message) {
    ++consecutive_failures_;
    next_delay_ms_ = std::min(kMaxBackoffMs, interval_ms_ << std::min(consecutive_failures_, 10));
    model_->setFailure(state, message, next_delay_ms_);
    scheduleNext(next_delay_ms_);
}

void MetricsPoller::scheduleNext(int delay_ms) {
    if (active_) timer_.start(delay_ms);
}

}  // namespace lorascope::ui
