#include "remote_backend.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMetaObject>
#include <QMutex>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "lorascope/error.h"

namespace lorascope::ui {

namespace {

using Clock = std::chrono::steady_clock;

QString openAiPrefix() { return QStringLiteral("openai+"); }

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Errors of the connection itself, worth another attempt; everything else (an HTTP status, a
// protocol error, a cancel) is final.
bool is_connection_error(QNetworkReply::NetworkError e) {
    switch (e) {
    case QNetworkReply::ConnectionRefusedError:
    case QNetworkReply::RemoteHostClosedError:
    case QNetworkReply::HostNotFoundError:
    case QNetworkReply::TemporaryNetworkFailureError:
    case QNetworkReply::NetworkSessionFailedError:
    case QNetworkReply::UnknownNetworkError:
        return true;
    default:
        return false;
    }
}

// "HTTP 422 (validation): `adapter_id` ... " from a LoRAX error body, or the body's start.
QString http_error_message(int status, const QByteArray& body) {
    const QJsonObject o = QJsonDocument::fromJson(body).object();
    if (o.contains(QStringLiteral("error"))) {
        const QJsonValue e = o.value(QStringLiteral("error"));
        // LoRAX: {"error": "...", "error_type": "..."}; OpenAI: {"error": {"message", "type"}}.
        const QString message = e.isObject() ? e.toObject().value(QStringLiteral("message")).toString() : e.toString();
        const QString type = e.isObject() ? e.toObject().value(QStringLiteral("type")).toString()
                                          : o.value(QStringLiteral("error_type")).toString();
        return QStringLiteral("HTTP %1 (%2): %3").arg(status).arg(type.isEmpty() ? QStringLiteral("no error_type") : type, message);
    }
    return QStringLiteral("HTTP %1: %2").arg(status).arg(QString::fromUtf8(body.left(200)));
}

FinishReason lorax_reason(const QString& r) {
    if (r == QLatin1String("length")) return FinishReason::Length;
    if (r == QLatin1String("stop_sequence")) return FinishReason::Stop;
    return FinishReason::Eos;
}

// Parameters the HTTP APIs cannot express: refused by name instead of silently dropped.
QString unsupported(const GenerationParams& p, RemoteDialect dialect) {
    if (p.num_beams && *p.num_beams > 1) return QStringLiteral("beam search (num_beams)");
    if (p.min_new_tokens) return QStringLiteral("min_new_tokens");
    if (p.no_repeat_ngram_size && *p.no_repeat_ngram_size > 0) return QStringLiteral("no_repeat_ngram_size");
    if (p.min_p) return QStringLiteral("min_p");
    if (p.length_penalty && *p.length_penalty != 1.0) return QStringLiteral("length_penalty");
    if (dialect == RemoteDialect::OpenAi && p.typical_p && *p.typical_p < 1.0) return QStringLiteral("typical_p");
    return {};
}

QJsonArray stop_array(const GenerationParams& p) {
    QJsonArray a;
    if (p.stop)
        for (const auto& s : *p.stop) a.append(QString::fromStdString(s));
    return a;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

bool isRemoteLocation(const QString& location) {
    QString l = location.trimmed();
    if (l.startsWith(openAiPrefix())) l = l.mid(openAiPrefix().size());
    return l.startsWith(QLatin1String("http://")) || l.startsWith(QLatin1String("https://"));
}

RemoteEndpoint parseRemoteLocation(const QString& location) {
    RemoteEndpoint e;
    QString l = location.trimmed();
    if (l.startsWith(openAiPrefix())) {
        e.dialect = RemoteDialect::OpenAi;
        l = l.mid(openAiPrefix().size());
    }
    while (l.endsWith(QLatin1Char('/'))) l.chop(1);
    e.url = QUrl(l);
    return e;
}

QString remoteLocation(const QUrl& url, RemoteDialect dialect) {
    const QString base = url.toString(QUrl::RemoveUserInfo | QUrl::StripTrailingSlash);
    return dialect == RemoteDialect::OpenAi ? openAiPrefix() + base : base;
}

namespace {
QMutex g_credentials_mutex;
QHash<QString, QString>& credentials() {
    static QHash<QString, QString> tokens;
    return tokens;
}
}  // namespace

void RemoteCredentials::setToken(const QString& location, const QString& token) {
    QMutexLocker lock(&g_credentials_mutex);
    if (token.isEmpty()) credentials().remove(location.trimmed());
    else credentials().insert(location.trimmed(), token);
}

QString RemoteCredentials::token(const QString& location) {
    QMutexLocker lock(&g_credentials_mutex);
    return credentials().value(location.trimmed());
}

// ---------------------------------------------------------------------------------------------

namespace {

// Lives on the engine's own thread with the QNetworkAccessManager; every network call runs here.
class Link : public QObject {
public:
    struct Stream {
        RequestId id = 0;
        std::shared_ptr<RequestSink> sink;
        QByteArray path, body;
        QNetworkReply* reply = nullptr;
        QNetworkAccessManager* manager = nullptr;   // chosen at the first attempt, kept for retries
        int attempts = 0;
        bool got_data = false, cancelled = false, finished = false, done_marker = false;
        QByteArray buffer;
        std::vector<int64_t> ids;
        std::vector<float> logprobs;
        std::string streamed;
        FinishReason reason = FinishReason::Eos;
        Usage usage;
        std::optional<std::string> final_text;
        Clock::time_point submitted = Clock::now();
        std::optional<double> first_token_ms;
    };

    // nam_ is the link's child so that moveToThread takes it along: a member without a parent
    // would keep the affinity of the thread that built the engine, and every reply it made on the
    // link's thread would be a child across threads (Qt warns, and its notifications go astray).
    Link(RemoteEndpoint endpoint, std::function<void(RequestId)> on_done)
        : endpoint_(std::move(endpoint)), nam_(this), stream_managers_{&nam_}, on_done_(std::move(on_done)) {}

    QNetworkRequest request_for(const QByteArray& path, bool streaming) {
        QUrl url = endpoint_.url;
        url.setPath(url.path() + QString::fromUtf8(path));
        QNetworkRequest r(url);
        r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
        if (streaming) r.setRawHeader("Accept", "text/event-stream");
        if (!endpoint_.api_token.isEmpty()) r.setRawHeader("Authorization", "Bearer " + endpoint_.api_token.toUtf8());
        r.setTransferTimeout(endpoint_.timeout_ms);
        return r;
    }

    // A blocking GET with the connection retries (used once, when the engine is created).
    QByteArray get_with_retries(const QByteArray& path) {
        QString last;
        for (int attempt = 0; attempt < std::max(1, endpoint_.connect_attempts); ++attempt) {
            if (attempt > 0) QThread::msleep(static_cast<unsigned long>(250) << (attempt - 1));
            QNetworkReply* reply = nam_.get(request_for(path, false));
            QEventLoop loop;
            QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
            loop.exec();
            reply->deleteLater();
            const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
            const QByteArray body = reply->readAll();
            if (status >= 400) throw Error(ErrorKind::NotFound, where(path), http_error_message(status, body).toStdString());
            if (reply->error() == QNetworkReply::NoError) return body;
            last = reply->errorString();
            if (!is_connection_error(reply->error())) break;
        }
        throw Error(ErrorKind::NotFound, where(path),
                    QStringLiteral("cannot reach the server after %1 attempt(s): %2").arg(endpoint_.connect_attempts).arg(last).toStdString());
    }

    std::string where(const QByteArray& path) const {
        return remoteLocation(endpoint_.url, endpoint_.dialect).toStdString() + path.toStdString();
    }

    void start(std::shared_ptr<Stream> s) {
        streams_[s->id] = s;
        send(s);
    }

    void send(const std::shared_ptr<Stream>& s) {
        ++s->attempts;
        QNetworkReply* reply = manager_for(s)->post(request_for(s->path, true), s->body);
        s->reply = reply;
        QObject::connect(reply, &QNetworkReply::readyRead, this, [this, s, reply] {
            if (s->reply != reply || s->finished) return;
            const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
            if (status >= 400) return;   // the error body is read whole in finished()
            s->got_data = true;
            s->buffer += reply->readAll();
            parse_events(s);
        });
        QObject::connect(reply, &QNetworkReply::finished, this, [this, s, reply] {
            reply->deleteLater();
            if (s->reply != reply) return;
            s->reply = nullptr;
            if (s->finished) return;
            if (s->cancelled) return finish(s, FinishReason::Cancelled, {});
            const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
            if (status >= 400) return finish(s, FinishReason::Error, http_error_message(status, reply->readAll()));
            if (reply->error() != QNetworkReply::NoError) {
                if (!s->got_data && is_connection_error(reply->error()) && s->attempts < endpoint_.connect_attempts) {
                    const int delay_ms = 250 << (s->attempts - 1);
                    QTimer::singleShot(delay_ms, this, [this, s] {
                        if (!s->cancelled && !s->finished) send(s);
                        else if (!s->finished) finish(s, FinishReason::Cancelled, {});
                    });
                    return;
                }
                QString why = reply->errorString();
                if (reply->error() == QNetworkReply::OperationCanceledError)
                    why = QStringLiteral("no data for %1 ms (timeout)").arg(endpoint_.timeout_ms);
                return finish(s, FinishReason::Error,
                              QStringLiteral("%1 after %2 attempt(s): %3")
                                  .arg(QString::fromStdString(where(s->path)))
                                  .arg(s->attempts)
                                  .arg(why));
            }
            s->buffer += reply->readAll();
            parse_events(s);
            if (!s->finished) {
                if (s->final_text) return finish(s, s->reason, {});
                finish(s, FinishReason::Error,
                       QStringLiteral("%1: the server closed the stream before the request finished")
                           .arg(QString::fromStdString(where(s->path))));
            }
        });
    }

    // Qt Network opens at most six HTTP/1.1 connections per server and manager and queues the rest
    // (Qt 6.4 has no setting for it; QHttp1Configuration came with 6.5). A queued request's transfer
    // timeout runs while it waits, so the seventh stream to a busy server failed after timeout_ms
    // without having been sent, and the server never batched more than six of the window's
    // requests. Each manager carries at most six streams; more streams get another manager. The
    // first is the one that asked for /info, so that its kept-alive connection serves the first
    // stream rather than holding one of the server's connections idle.
    QNetworkAccessManager* manager_for(const std::shared_ptr<Stream>& s) {
        if (s->manager) return s->manager;
        std::map<QNetworkAccessManager*, int> load;
        for (const auto& [id, other] : streams_)
            if (other->manager) ++load[other->manager];
        for (QNetworkAccessManager* m : stream_managers_)
            if (load[m] < kStreamsPerManager) return s->manager = m;
        stream_managers_.push_back(new QNetworkAccessManager(this));   // a child: it follows moveToThread
        return s->manager = stream_managers_.back();
    }

    void cancel(RequestId id) {
        auto it = streams_.find(id);
        if (it == streams_.end()) return;
        auto s = it->second;
        s->cancelled = true;
        if (s->reply) s->reply->abort();   // closes the connection: the server cancels the request
        else if (!s->finished) finish(s, FinishReason::Cancelled, {});
    }

    void cancel_all() {
        std::vector<RequestId> ids;
        for (const auto& [id, s] : streams_) ids.push_back(id);
        for (RequestId id : ids) cancel(id);
    }

    void parse_events(const std::shared_ptr<Stream>& s) {
        s->buffer.replace("\r\n", "\n");
        for (;;) {
            const int end = s->buffer.indexOf("\n\n");
            if (end < 0 || s->finished) return;
            const QByteArray event = s->buffer.left(end);
            s->buffer.remove(0, end + 2);
            QByteArray data;
            for (const QByteArray& line : event.split('\n')) {
                if (!line.startsWith("data:")) continue;   // comments (keep-alives), event names, ids
                QByteArray d = line.mid(5);
                if (d.startsWith(' ')) d.remove(0, 1);
                data += d;
            }
            if (data.isEmpty()) continue;
            if (data == "[DONE]") {
                s->done_marker = true;
                if (s->final_text) finish(s, s->reason, {});
                continue;
            }
            QJsonParseError error{};
            const QJsonDocument doc = QJsonDocument::fromJson(data, &error);
            if (error.error != QJsonParseError::NoError || !doc.isObject()) {
                abort_with(s, QStringLiteral("%1: malformed server-sent event (%2): %3")
                                  .arg(QString::fromStdString(where(s->path)), error.errorString(),
                                       QString::fromUtf8(data.left(120))));
                return;
            }
            const QJsonObject o = doc.object();
            if (o.contains(QStringLiteral("error"))) {
                abort_with(s, http_error_message(200, data).replace(QStringLiteral("HTTP 200"), QStringLiteral("stream error")));
                return;
            }
            if (endpoint_.dialect == RemoteDialect::Lorax) on_lorax_event(s, o);
            else on_openai_event(s, o);
        }
    }

    void emit_token(const std::shared_ptr<Stream>& s, int64_t id, const QString& text, float logprob, bool special) {
        if (!s->first_token_ms) s->first_token_ms = ms_since(s->submitted);
        TokenEvent t;
        t.id = s->id;
        t.token_id = id;
        t.text_delta = text.toStdString();
        t.logprob = logprob;
        t.special = special;
        s->ids.push_back(id);
        s->logprobs.push_back(logprob);
        s->streamed += t.text_delta;
        try {
            s->sink->on_token(t);
        } catch (...) {
        }
    }

    void on_lorax_event(const std::shared_ptr<Stream>& s, const QJsonObject& o) {
        const QJsonObject token = o.value(QStringLiteral("token")).toObject();
        if (token.isEmpty()) return abort_with(s, QStringLiteral("a LoRAX stream event without a token"));
        emit_token(s, token.value(QStringLiteral("id")).toInteger(), token.value(QStringLiteral("text")).toString(),
                   static_cast<float>(token.value(QStringLiteral("logprob")).toDouble(NAN)),
                   token.value(QStringLiteral("special")).toBool());
        const QJsonValue text = o.value(QStringLiteral("generated_text"));
        if (text.isNull() || text.isUndefined()) return;
        const QJsonObject details = o.value(QStringLiteral("details")).toObject();
        s->final_text = text.toString().toStdString();
        s->reason = lorax_reason(details.value(QStringLiteral("finish_reason")).toString());
        s->usage.prompt_tokens = details.value(QStringLiteral("prompt_tokens")).toInteger();
        s->usage.generated_tokens = details.value(QStringLiteral("generated_tokens")).toInteger(static_cast<qint64>(s->ids.size()));
        finish(s, s->reason, {});
    }

    void on_openai_event(const std::shared_ptr<Stream>& s, const QJsonObject& o) {
        const QJsonObject choice = o.value(QStringLiteral("choices")).toArray().at(0).toObject();
        const QString text = choice.value(QStringLiteral("text")).toString();
        const QJsonObject lp = choice.value(QStringLiteral("logprobs")).toObject();
        const QJsonArray token_lps = lp.value(QStringLiteral("token_logprobs")).toArray();
        if (!token_lps.isEmpty()) {
            // OpenAI gives no token ids: -1 says so.
            emit_token(s, -1, text, static_cast<float>(token_lps.at(0).toDouble(NAN)), false);
        } else if (!text.isEmpty()) {
            s->streamed += text.toStdString();
        }
        const QString reason = choice.value(QStringLiteral("finish_reason")).toString();
        if (!reason.isEmpty()) {
            s->reason = reason == QLatin1String("length") ? FinishReason::Length : FinishReason::Eos;
            s->final_text = s->streamed;
            const QJsonObject usage = o.value(QStringLiteral("usage")).toObject();
            s->usage.prompt_tokens = usage.value(QStringLiteral("prompt_tokens")).toInteger();
            s->usage.generated_tokens =
                usage.value(QStringLiteral("completion_tokens")).toInteger(static_cast<qint64>(s->ids.size()));
            if (s->done_marker) finish(s, s->reason, {});
        }
    }

    void abort_with(const std::shared_ptr<Stream>& s, const QString& message) { finish(s, FinishReason::Error, message); }

    void finish(const std::shared_ptr<Stream>& s, FinishReason reason, const QString& error) {
        if (s->finished) return;
        s->finished = true;
        FinishEvent f;
        f.id = s->id;
        f.reason = reason;
        f.text = s->final_text.value_or(s->streamed);
        f.token_ids = s->ids;
        f.logprobs = s->logprobs;
        f.usage = s->usage;
        if (f.usage.generated_tokens == 0) f.usage.generated_tokens = static_cast<int64_t>(s->ids.size());
        f.usage.time_to_first_token_ms = s->first_token_ms.value_or(0);
        f.usage.total_ms = ms_since(s->submitted);
        f.error = error.toStdString();
        try {
            s->sink->on_finish(f);
        } catch (...) {
        }
        // A failed stream is closed here; a finished one ends by itself, a cancelled one is aborted already.
        if (s->reply && reason == FinishReason::Error) s->reply->abort();
        streams_.erase(s->id);
        on_done_(s->id);
    }

    void start_failed(RequestId id, const std::shared_ptr<RequestSink>& sink, const QString& message) {
        auto s = std::make_shared<Stream>();
        s->id = id;
        s->sink = sink;
        streams_[id] = s;
        finish(s, FinishReason::Error, message);
    }

    RemoteEndpoint endpoint_;

private:
    static constexpr int kStreamsPerManager = 6;
    QNetworkAccessManager nam_;                           // /info and /v1/models, and the first streams
    std::vector<QNetworkAccessManager*> stream_managers_;  // nam_, then more as needed (children of the link)
    std::map<RequestId, std::shared_ptr<Link::Stream>> streams_;
    std::function<void(RequestId)> on_done_;
};

class RemoteEngine final : public Engine {
public:
    explicit RemoteEngine(RemoteEndpoint endpoint) {
        if (!endpoint.url.isValid() || endpoint.url.host().isEmpty())
            throw Error(ErrorKind::InvalidArgument, endpoint.url.toString().toStdString(), "not a server URL (http://host:port)");
        thread_.setObjectName(QStringLiteral("lorascope-remote"));
        link_ = new Link(endpoint, [this](RequestId id) {
            std::lock_guard<std::mutex> lock(mutex_);
            active_.erase(id);
            idle_.notify_all();
        });
        link_->moveToThread(&thread_);
        thread_.start();
        try {
            connect_to_server();
        } catch (...) {
            shutdown();
            throw;
        }
    }

    ~RemoteEngine() override { shutdown(); }

    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override {
        const RequestId id = ++next_id_;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            active_.insert(id);
        }
        auto s = std::make_shared<Link::Stream>();
        s->id = id;
        s->sink = sink;
        QString refused;
        if (!request.prompt) refused = QStringLiteral("a remote server takes prompt text, not token ids");
        else if (const QString what = unsupported(request.params, link_->endpoint_.dialect); !what.isEmpty())
            refused = QStringLiteral("%1 is not offered by the %2 API").arg(what, dialect_name());
        if (refused.isEmpty()) {
            if (link_->endpoint_.dialect == RemoteDialect::Lorax) {
                s->path = "/generate_stream";
                s->body = QJsonDocument(lorax_body(request)).toJson(QJsonDocument::Compact);
            } else {
                s->path = "/v1/completions";
                s->body = QJsonDocument(openai_body(request)).toJson(QJsonDocument::Compact);
            }
        }
        Link* link = link_;
        QMetaObject::invokeMethod(link, [link, s, refused, sink, id] {
            if (!refused.isEmpty()) link->start_failed(id, sink, refused);
            else link->start(s);
        }, Qt::QueuedConnection);
        return id;
    }

    void cancel(RequestId id) override {
        Link* link = link_;
        QMetaObject::invokeMethod(link, [link, id] { link->cancel(id); }, Qt::QueuedConnection);
    }
    void cancel_all() override {
        Link* link = link_;
        QMetaObject::invokeMethod(link, [link] { link->cancel_all(); }, Qt::QueuedConnection);
    }

    // The server loads its own adapters: a name added here is sent as adapter_id (OpenAI: model).
    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        AdapterInfo info;
        info.name = name;
        info.path = dir;
        info.loaded = true;
        info.warnings.push_back("remote: the server resolves adapter '" + name + "' itself; the directory is not read");
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& a : adapters_)
            if (a.name == name) return a;
        adapters_.push_back(info);
        return info;
    }
    void unload_adapter(const std::string& name) override {
        std::lock_guard<std::mutex> lock(mutex_);
        adapters_.erase(std::remove_if(adapters_.begin(), adapters_.end(), [&](const AdapterInfo& a) { return a.name == name; }),
                        adapters_.end());
    }
    std::vector<AdapterInfo> adapters() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return adapters_;
    }

    // A server publishes no engine steps; the inspector's per-step views stay empty for it.
    void set_stats_listener(std::function<void(const StepStats&)>) override {}
    void set_paused(bool) override {}   // a shared server is not ours to pause
    void step_once() override {}
    void wait_idle() override {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_.wait(lock, [&] { return active_.empty(); });
    }
    const ModelConfig& model_config() const override { return model_; }
    const GenerationConfig& generation_config() const override { return generation_; }

private:
    QString dialect_name() const { return link_->endpoint_.dialect == RemoteDialect::Lorax ? QStringLiteral("LoRAX") : QStringLiteral("OpenAI"); }

    void connect_to_server() {
        Link* link = link_;
        QByteArray body;
        std::exception_ptr failure;
        const QByteArray path = link->endpoint_.dialect == RemoteDialect::Lorax ? "/info" : "/v1/models";
        QMetaObject::invokeMethod(link, [&] {
            try {
                body = link->get_with_retries(path);
            } catch (...) {
                failure = std::current_exception();
            }
        }, Qt::BlockingQueuedConnection);
        if (failure) std::rethrow_exception(failure);
        const QJsonObject o = QJsonDocument::fromJson(body).object();
        model_.model_type = link->endpoint_.dialect == RemoteDialect::Lorax ? "remote LoRAX server" : "remote OpenAI server";
        if (link->endpoint_.dialect == RemoteDialect::Lorax) {
            model_id_ = o.value(QStringLiteral("model_id")).toString();
            const QString family = o.value(QStringLiteral("model_family")).toString();
            if (family == QLatin1String("bart")) {
                model_.family = Family::Bart;
                model_.arch = BartConfig{};
            } else if (family == QLatin1String("bloom")) {
                model_.family = Family::Bloom;
                model_.arch = BloomConfig{};
            }
            for (const auto& a : o.value(QStringLiteral("adapters")).toArray())
                load_adapter(a.toObject().value(QStringLiteral("name")).toString().toStdString(), {});
        } else {
            const QJsonArray models = o.value(QStringLiteral("data")).toArray();
            if (models.isEmpty()) throw Error(ErrorKind::Format, link->where(path), "the server lists no models");
            model_id_ = models.at(0).toObject().value(QStringLiteral("id")).toString();
            for (int i = 1; i < models.size(); ++i)
                load_adapter(models.at(i).toObject().value(QStringLiteral("id")).toString().toStdString(), {});
        }
        model_.name_or_path = model_id_.toStdString();
    }

    QJsonObject lorax_body(const Request& r) const {
        const GenerationParams& p = r.params;
        QJsonObject params{{QStringLiteral("details"), true}};
        if (!r.adapter.empty()) params.insert(QStringLiteral("adapter_id"), QString::fromStdString(r.adapter));
        if (p.max_new_tokens) params.insert(QStringLiteral("max_new_tokens"), static_cast<qint64>(*p.max_new_tokens));
        // LoRAX samples whenever a sampling knob is set: send them only when sampling is asked for.
        if (p.do_sample.value_or(generation_.do_sample)) {
            params.insert(QStringLiteral("do_sample"), true);
            if (p.temperature) params.insert(QStringLiteral("temperature"), *p.temperature);
            if (p.top_k && *p.top_k > 0) params.insert(QStringLiteral("top_k"), static_cast<qint64>(*p.top_k));
            if (p.top_p && *p.top_p < 1) params.insert(QStringLiteral("top_p"), *p.top_p);
            if (p.typical_p && *p.typical_p < 1) params.insert(QStringLiteral("typical_p"), *p.typical_p);
        }
        if (p.repetition_penalty) params.insert(QStringLiteral("repetition_penalty"), *p.repetition_penalty);
        if (p.seed) params.insert(QStringLiteral("seed"), static_cast<qint64>(*p.seed));
        if (p.ignore_eos && *p.ignore_eos) params.insert(QStringLiteral("ignore_eos_token"), true);
        if (p.stop && !p.stop->empty()) params.insert(QStringLiteral("stop"), stop_array(p));
        return {{QStringLiteral("inputs"), QString::fromStdString(*r.prompt)}, {QStringLiteral("parameters"), params}};
    }

    QJsonObject openai_body(const Request& r) const {
        const GenerationParams& p = r.params;
        const bool sample = p.do_sample.value_or(generation_.do_sample);
        QJsonObject b{{QStringLiteral("model"), r.adapter.empty() ? model_id_ : QString::fromStdString(r.adapter)},
                      {QStringLiteral("prompt"), QString::fromStdString(*r.prompt)},
                      {QStringLiteral("stream"), true},
                      {QStringLiteral("logprobs"), 1},
                      {QStringLiteral("max_tokens"), static_cast<qint64>(p.max_new_tokens.value_or(16))},
                      {QStringLiteral("temperature"), sample ? p.temperature.value_or(1.0) : 0.0}};
        if (sample && p.top_p) b.insert(QStringLiteral("top_p"), *p.top_p);
        if (sample && p.top_k && *p.top_k > 0) b.insert(QStringLiteral("top_k"), static_cast<qint64>(*p.top_k));
        if (p.repetition_penalty) b.insert(QStringLiteral("repetition_penalty"), *p.repetition_penalty);
        if (p.seed) b.insert(QStringLiteral("seed"), static_cast<qint64>(*p.seed));
        if (p.ignore_eos && *p.ignore_eos) b.insert(QStringLiteral("ignore_eos"), true);
        if (p.stop && !p.stop->empty()) b.insert(QStringLiteral("stop"), stop_array(p));
        return b;
    }

    void shutdown() {
        if (!link_) return;
        Link* link = link_;
        // The link and its QNetworkAccessManager are deleted on their own thread: deleteLater runs
        // as the thread finishes (QThread processes deferred deletes on exit).
        QMetaObject::invokeMethod(link, [link] {
            link->cancel_all();
            link->deleteLater();
        }, Qt::BlockingQueuedConnection);
        link_ = nullptr;
        thread_.quit();
        thread_.wait();
    }

    QThread thread_;
    Link* link_ = nullptr;
    std::atomic<RequestId> next_id_{0};
    mutable std::mutex mutex_;
    std::condition_variable idle_;
    std::set<RequestId> active_;
    std::vector<AdapterInfo> adapters_;
    ModelConfig model_;
    GenerationConfig generation_;
    QString model_id_;
};

}  // namespace

std::unique_ptr<Engine> createRemoteEngine(const RemoteEndpoint& endpoint) {
    if (!QCoreApplication::instance())
        throw Error(ErrorKind::Internal, "the remote backend needs a QCoreApplication (Qt Network)");
    return std::make_unique<RemoteEngine>(endpoint);
}

std::unique_ptr<Engine> createEngineForLocation(const EngineOptions& options,
                                                const std::function<std::unique_ptr<Engine>(const EngineOptions&)>& local) {
    const QString location = QString::fromStdString(options.model_dir);
    if (!isRemoteLocation(location)) return local(options);
    RemoteEndpoint endpoint = parseRemoteLocation(location);
    endpoint.api_token = RemoteCredentials::token(location);
    return createRemoteEngine(endpoint);
}

}  // namespace lorascope::ui
