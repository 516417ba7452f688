// Polls a remote server's GET /metrics on the GUI thread (Qt Network, asynchronous: the window
// never waits for it) while a remote backend is active, and feeds ServerMetricsModel. One request
// at a time; after a failure (connection, timeout, HTTP 4xx/5xx, nothing recognisable) the next
// poll waits twice as long, up to kMaxBackoffMs, and a success returns to the interval. Failures
// become the model's state (a label in the inspector), never a dialog. The API token goes only
// into the Authorization header.
#pragma once

#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <QUrl>

#include "remote/server_metrics.h"

class QNetworkReply;

namespace lorascope::ui {

class MetricsPoller : public QObject {
    Q_OBJECT
public:
    static constexpr int kDefaultIntervalMs = 1000;
    static constexpr int kMaxBackoffMs = 30000;

    explicit MetricsPoller(ServerMetricsModel* model, QObject* parent = nullptr);
    ~MetricsPoller() override;

    // Polls base_url + "/metrics" now and every interval; restarts (history cleared) when running.
    void start(const QUrl& base_url, const QString& api_token);
    void stop();
    bool isActive() const { return active_; }
    void setIntervalMs(int ms);
    int intervalMs() const { return interval_ms_; }
    // The wait before the next poll: the interval, or the backoff after failures.
    int nextDelayMs() const { return next_delay_ms_; }
    // How long one poll may take before it counts as a failure.
    void setTimeoutMs(int ms) { timeout_ms_ = ms; }

private:
    void poll();
    void onReply(QNetworkReply* reply);
    void failed(ServerMetricsModel::State state, const QString& message);
    void scheduleNext(int delay_ms);

    QPointer<ServerMetricsModel> model_;
    QNetworkAccessManager nam_;
    QTimer timer_;
    QElapsedTimer clock_;
    QPointer<QNetworkReply> in_flight_;
    QUrl metrics_url_;
    QByteArray authorization_;
    bool active_ = false;
    int interval_ms_ = kDefaultIntervalMs, timeout_ms_ = 5000, next_delay_ms_ = kDefaultIntervalMs;
    int consecutive_failures_ = 0;
};

}  // namespace lorascope::ui
