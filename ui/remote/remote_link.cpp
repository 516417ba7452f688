#include "remote/remote_link.h"

#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cmath>

#include "lorascope/error.h"
#include "remote/remote_chat.h"

namespace lorascope::ui::remote_detail {

namespace {

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

}  // namespace

Link::Link(RemoteEndpoint endpoint, std::function<void(RequestId)> on_done)
    : endpoint_(std::move(endpoint)), nam_(this), stream_managers_{&nam_}, on_done_(std::move(on_done)) {}

QNetworkRequest Link::request_for(const QByteArray& path, bool streaming) {
    QUrl url = endpoint_.url;
    url.setPath(url.path() + QString::fromUtf8(path));
    QNetworkRequest r(url);
    r.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
    if (streaming) r.setRawHeader("Accept", "text/event-stream");
    if (!endpoint_.api_token.isEmpty()) r.setRawHeader("Authorization", "Bearer " + endpoint_.api_token.toUtf8());
    r.setTransferTimeout(endpoint_.timeout_ms);
    // The token is for this server: a redirect elsewhere would carry it along (Qt's default
    // policy follows any redirect that is no less safe, keeping the Authorization header).
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::SameOriginRedirectPolicy);
    return r;
}

QByteArray Link::get_with_retries(const QByteArray& path) {
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

std::string Link::where(const QByteArray& path) const {
    return remoteLocation(endpoint_.url, endpoint_.dialect).toStdString() + path.toStdString();
}

void Link::start(std::shared_ptr<Link::Stream> s) {
    streams_[s->id] = s;
    send(s);
}

void Link::send(const std::shared_ptr<Link::Stream>& s) {
    ++s->attempts;
    s->buffer.clear();
    s->scanned = 0;
    s->error_body.clear();
    QNetworkReply* reply = manager_for(s)->post(request_for(s->path, !s->whole), s->body);
    s->reply = reply;
    reply->setReadBufferSize(2 * kMaxEventBytes);   // Qt holds no more than that unread; we read at each readyRead
    QObject::connect(reply, &QNetworkReply::readyRead, this, [this, s, reply] { guarded(s, [&] { on_ready_read(s, reply); }); });
    QObject::connect(reply, &QNetworkReply::finished, this, [this, s, reply] {
        reply->deleteLater();
        guarded(s, [&] { on_finished(s, reply); });
    });
}

template <typename F>
void Link::guarded(const std::shared_ptr<Stream>& s, F&& body) {
    try {
        body();
    } catch (const std::exception& e) {
        finish(s, FinishReason::Error, QStringLiteral("%1: %2").arg(QString::fromStdString(where(s->path)), QString::fromUtf8(e.what())));
    } catch (...) {
        finish(s, FinishReason::Error, QStringLiteral("%1: an unknown failure while reading the stream").arg(QString::fromStdString(where(s->path))));
    }
}

void Link::on_ready_read(const std::shared_ptr<Stream>& s, QNetworkReply* reply) {
    if (s->reply != reply || s->finished) return;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) {   // the error's start is enough to say what it was; the rest is dropped
        const QByteArray more = reply->readAll();
        s->error_body += more.left(std::max<qsizetype>(0, kMaxErrorBody - s->error_body.size()));
        return;
    }
    if (!s->got_data && s->attempts > 1) tell_retry(s, 0, {});   // the server answers again
    s->got_data = true;
    read_events(s, reply);
}

void Link::tell_retry(const std::shared_ptr<Stream>& s, int attempt, const QString& reason) {
    RetryEvent e;
    e.id = s->id;
    e.attempt = attempt;
    e.reason = reason.toStdString();
    try {
        s->sink->on_retry(e);
    } catch (...) {
    }
}

void Link::on_finished(const std::shared_ptr<Stream>& s, QNetworkReply* reply) {
    if (s->reply != reply) return;
    s->reply = nullptr;
    if (s->finished) return;
    if (s->cancelled) return finish(s, FinishReason::Cancelled, {});
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) {
        s->error_body += reply->read(std::max<qsizetype>(0, kMaxErrorBody - s->error_body.size()));
        return finish(s, FinishReason::Error, http_error_message(status, s->error_body));
    }
    if (reply->error() != QNetworkReply::NoError) {
        const int delay_ms = 250 << std::min(s->attempts - 1, 4);   // 250 ms .. 4 s
        if (!s->got_data && is_connection_error(reply->error()) && ms_since(s->submitted) + delay_ms <= endpoint_.retry_for_ms) {
            tell_retry(s, s->attempts, reply->errorString());   // the row says "retrying (n)" meanwhile
            QTimer::singleShot(delay_ms, this, [this, s] {
                guarded(s, [&] {
                    if (!s->cancelled && !s->finished) send(s);
                    else if (!s->finished) finish(s, FinishReason::Cancelled, {});
                });
            });
            return;
        }
        QString why = reply->errorString();
        if (reply->error() == QNetworkReply::OperationCanceledError)
            why = QStringLiteral("no data for %1 ms (timeout)").arg(endpoint_.timeout_ms);
        return finish(s, FinishReason::Error,
                      QStringLiteral("%1 after %2 attempt(s): %3").arg(QString::fromStdString(where(s->path))).arg(s->attempts).arg(why));
    }
    read_events(s, reply);
    if (s->whole && !s->finished) {
        QJsonParseError error{};
        const QJsonDocument doc = QJsonDocument::fromJson(s->buffer, &error);
        if (error.error != QJsonParseError::NoError || !doc.isObject())
            return abort_with(s, QStringLiteral("%1: malformed answer (%2): %3")
                                     .arg(QString::fromStdString(where(s->path)), error.errorString(),
                                          QString::fromUtf8(s->buffer.left(120))));
        return on_lorax_whole(s, doc.object());
    }
    if (!s->finished) {
        if (s->final_text) return finish(s, s->reason, {});
        finish(s, FinishReason::Error,
               QStringLiteral("%1: the server closed the stream before the request finished").arg(QString::fromStdString(where(s->path))));
    }
}

QNetworkAccessManager* Link::manager_for(const std::shared_ptr<Link::Stream>& s) {
    if (s->manager) return s->manager;
    std::map<QNetworkAccessManager*, int> load;
    for (const auto& [id, other] : streams_)
        if (other->manager) ++load[other->manager];
    for (QNetworkAccessManager* m : stream_managers_)
        if (load[m] < kStreamsPerManager) return s->manager = m;
    stream_managers_.push_back(new QNetworkAccessManager(this));   // a child: it follows moveToThread
    return s->manager = stream_managers_.back();
}

void Link::cancel(RequestId id) {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    auto s = it->second;
    s->cancelled = true;
    if (s->reply) s->reply->abort();   // closes the connection: the server cancels the request
    else if (!s->finished) finish(s, FinishReason::Cancelled, {});
}

void Link::cancel_all() {
    std::vector<RequestId> ids;
    for (const auto& [id, s] : streams_) ids.push_back(id);
    for (RequestId id : ids) cancel(id);
}

void Link::read_events(const std::shared_ptr<Link::Stream>& s, QNetworkReply* reply) {
    QByteArray more = reply->readAll();
    // JSON escapes its carriage returns, so every raw one is a line end's (CRLF framing).
    if (s->whole) {   // one JSON answer, read at the end
        s->buffer += more;
        if (s->buffer.size() > kMaxEventBytes)
            abort_with(s, QStringLiteral("%1: an answer longer than %2 MiB (the window's limit)")
                              .arg(QString::fromStdString(where(s->path)))
                              .arg(kMaxEventBytes >> 20));
        return;
    }
    more.replace('\r', QByteArray());
    s->buffer += more;
    parse_events(s);
    if (!s->finished && s->buffer.size() > kMaxEventBytes)
        abort_with(s, QStringLiteral("%1: a server-sent event longer than %2 MiB (the window's limit per event)")
                          .arg(QString::fromStdString(where(s->path)))
                          .arg(kMaxEventBytes >> 20));
}

// Each event is searched for once: the scan resumes where the last one stopped, and what was read
// leaves the buffer in one move per arrival, not one per event.
void Link::parse_events(const std::shared_ptr<Link::Stream>& s) {
    qsizetype begin = 0;
    while (!s->finished) {
        const qsizetype end = s->buffer.indexOf("\n\n", std::max(begin, s->scanned - 1));
        if (end < 0) break;
        dispatch_event(s, s->buffer.mid(begin, end - begin));
        begin = end + 2;
        s->scanned = begin;
    }
    s->buffer.remove(0, begin);
    s->scanned = s->buffer.size();
}

void Link::dispatch_event(const std::shared_ptr<Link::Stream>& s, const QByteArray& event) {
    QByteArray data;
    for (const QByteArray& line : event.split('\n')) {
        if (!line.startsWith("data:")) continue;   // comments (keep-alives), event names, ids
        QByteArray d = line.mid(5);
        if (d.startsWith(' ')) d.remove(0, 1);
        data += d;
    }
    if (data.isEmpty()) return;
    if (data == "[DONE]") {
        s->done_marker = true;
        if (s->final_text) finish(s, s->reason, {});
        return;
    }
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(data, &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        return abort_with(s, QStringLiteral("%1: malformed server-sent event (%2): %3")
                                 .arg(QString::fromStdString(where(s->path)), error.errorString(), QString::fromUtf8(data.left(120))));
    const QJsonObject o = doc.object();
    if (o.contains(QStringLiteral("error")))
        return abort_with(s, http_error_message(200, data).replace(QStringLiteral("HTTP 200"), QStringLiteral("stream error")));
    if (s->chat) on_openai_event(s, completionChunkOf(o));
    else if (endpoint_.dialect == RemoteDialect::Lorax) on_lorax_event(s, o);
    else on_openai_event(s, o);
}

void Link::emit_token(const std::shared_ptr<Link::Stream>& s, int64_t id, const QString& text, float logprob, bool special,
                      std::vector<TokenAlternative> alternatives) {
    if (!s->first_token_ms) s->first_token_ms = ms_since(s->submitted);
    TokenEvent t;
    t.id = s->id;
    t.token_id = id;
    t.text_delta = text.toStdString();
    t.logprob = logprob;
    t.special = special;
    t.alternatives = std::move(alternatives);
    s->ids.push_back(id);
    s->logprobs.push_back(logprob);
    if (!t.alternatives.empty()) {
        s->alternatives.resize(s->ids.size() - 1);   // tokens that came without any keep their place
        s->alternatives.push_back(t.alternatives);
    }
    s->streamed += t.text_delta;
    try {
        s->sink->on_token(t);
    } catch (...) {
    }
}

void Link::emit_lorax_token(const std::shared_ptr<Link::Stream>& s, const QJsonObject& token) {
    std::vector<TokenAlternative> alternatives;
    for (const auto& v : token.value(QStringLiteral("alternative_tokens")).toArray()) {
        const QJsonObject a = v.toObject();
        TokenAlternative alt;
        alt.token_id = a.value(QStringLiteral("id")).toInteger();
        alt.logprob = static_cast<float>(a.value(QStringLiteral("logprob")).toDouble(NAN));
        alt.text = a.value(QStringLiteral("text")).toString().toStdString();
        alternatives.push_back(std::move(alt));
    }
    emit_token(s, token.value(QStringLiteral("id")).toInteger(), token.value(QStringLiteral("text")).toString(),
               static_cast<float>(token.value(QStringLiteral("logprob")).toDouble(NAN)),
               token.value(QStringLiteral("special")).toBool(), std::move(alternatives));
}

void Link::take_lorax_details(const std::shared_ptr<Link::Stream>& s, const QJsonValue& text, const QJsonObject& details) {
    s->final_text = text.toString().toStdString();
    s->reason = lorax_reason(details.value(QStringLiteral("finish_reason")).toString());
    s->usage.prompt_tokens = details.value(QStringLiteral("prompt_tokens")).toInteger();
    s->usage.generated_tokens = details.value(QStringLiteral("generated_tokens")).toInteger(static_cast<qint64>(s->ids.size()));
}

void Link::on_lorax_event(const std::shared_ptr<Link::Stream>& s, const QJsonObject& o) {
    const QJsonObject token = o.value(QStringLiteral("token")).toObject();
    if (token.isEmpty()) return abort_with(s, QStringLiteral("a LoRAX stream event without a token"));
    emit_lorax_token(s, token);
    const QJsonValue text = o.value(QStringLiteral("generated_text"));
    if (text.isNull() || text.isUndefined()) return;
    take_lorax_details(s, text, o.value(QStringLiteral("details")).toObject());
    finish(s, s->reason, {});
}

void Link::on_lorax_whole(const std::shared_ptr<Link::Stream>& s, const QJsonObject& o) {
    const QJsonValue text = o.value(QStringLiteral("generated_text"));
    const QJsonObject details = o.value(QStringLiteral("details")).toObject();
    if (!text.isString() || details.isEmpty())
        return abort_with(s, QStringLiteral("%1: an answer without generated_text and details").arg(QString::fromStdString(where(s->path))));
    for (const auto& v : details.value(QStringLiteral("prefill")).toArray()) {
        const QJsonObject p = v.toObject();
        PromptTokenLogprob t;
        t.token_id = p.value(QStringLiteral("id")).toInteger();
        t.text = p.value(QStringLiteral("text")).toString().toStdString();
        if (p.value(QStringLiteral("logprob")).isDouble()) t.logprob = static_cast<float>(p.value(QStringLiteral("logprob")).toDouble());
        s->prompt_logprobs.push_back(std::move(t));
    }
    for (const auto& v : details.value(QStringLiteral("tokens")).toArray()) emit_lorax_token(s, v.toObject());
    take_lorax_details(s, text, details);
    finish(s, s->reason, {});
}

namespace {

// One token's entry in OpenAI's legacy top_logprobs, {text: logprob} for the chosen token and the
// k most likely (vLLM: k + 1 entries when the chosen one is not among them), as the k most likely,
// most likely first. OpenAI names no token ids: -1 says so (such an alternative cannot be forced).
std::vector<TokenAlternative> openai_alternatives(const QJsonValue& entry, int64_t k) {
    std::vector<TokenAlternative> out;
    const QJsonObject o = entry.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        TokenAlternative a;
        a.token_id = -1;
        a.text = it.key().toStdString();
        a.logprob = static_cast<float>(it.value().toDouble(NAN));
        out.push_back(std::move(a));
    }
    std::stable_sort(out.begin(), out.end(), [](const TokenAlternative& a, const TokenAlternative& b) {
        return a.logprob > b.logprob;
    });
    if (static_cast<int64_t>(out.size()) > k) out.resize(static_cast<size_t>(k));
    return out;
}

}  // namespace

// One chunk of an OpenAI /v1/completions stream. Shapes seen from vLLM 0.32 (scripts/check-vllm):
// a chunk may carry several tokens (--stream-interval N, or a client that reads slower than the
// engine decodes), with `logprobs.tokens`/`token_logprobs` one entry per token; its `text` is the
// detokenized delta, which need not be the concatenation of `tokens` (incomplete UTF-8, text held
// back while it may still become a stop string); a stop string ends with finish_reason "stop" and
// `stop_reason` naming it; usage arrives (with stream_options include_usage) in a chunk of its own
// with no choices, after the finish and before [DONE].
void Link::on_openai_event(const std::shared_ptr<Link::Stream>& s, const QJsonObject& o) {
    const QJsonObject usage = o.value(QStringLiteral("usage")).toObject();
    if (!usage.isEmpty()) {
        s->usage.prompt_tokens = usage.value(QStringLiteral("prompt_tokens")).toInteger();
        s->usage.generated_tokens =
            usage.value(QStringLiteral("completion_tokens")).toInteger(static_cast<qint64>(s->ids.size()));
    }
    const QJsonArray choices = o.value(QStringLiteral("choices")).toArray();
    if (choices.isEmpty()) return;
    const QJsonObject choice = choices.at(0).toObject();
    const QString text = choice.value(QStringLiteral("text")).toString();
    const QJsonObject lp = choice.value(QStringLiteral("logprobs")).toObject();
    const QJsonArray token_lps = lp.value(QStringLiteral("token_logprobs")).toArray();
    const QJsonArray token_texts = lp.value(QStringLiteral("tokens")).toArray();
    const QJsonArray top = lp.value(QStringLiteral("top_logprobs")).toArray();
    if (!token_lps.isEmpty()) {
        // Each token its own text where they add up to the chunk's text; otherwise the whole delta
        // goes with the chunk's last token, so that the streamed text stays the server's.
        QString joined;
        for (const auto& t : token_texts) joined += t.toString();
        const bool split = token_texts.size() == token_lps.size() && joined == text;
        for (int i = 0; i < token_lps.size(); ++i) {
            const QString piece = split ? token_texts.at(i).toString() : (i + 1 == token_lps.size() ? text : QString());
            // OpenAI gives no token ids: -1 says so.
            emit_token(s, -1, piece, static_cast<float>(token_lps.at(i).toDouble(NAN)), false,
                       s->top_alternatives > 0 && i < top.size() ? openai_alternatives(top.at(i), s->top_alternatives)
                                                                 : std::vector<TokenAlternative>{});
        }
    } else if (!text.isEmpty()) {
        s->streamed += text.toStdString();
    }
    const QString reason = choice.value(QStringLiteral("finish_reason")).toString();
    if (!reason.isEmpty()) {
        if (reason == QLatin1String("length")) s->reason = FinishReason::Length;
        else if (choice.value(QStringLiteral("stop_reason")).isString()) s->reason = FinishReason::Stop;
        else s->reason = FinishReason::Eos;
        s->final_text = s->streamed;
        if (s->done_marker) finish(s, s->reason, {});
    }
}

void Link::finish(const std::shared_ptr<Link::Stream>& s, FinishReason reason, const QString& error) {
    if (s->finished) return;
    s->finished = true;
    FinishEvent f;
    f.id = s->id;
    f.reason = reason;
    f.text = s->final_text.value_or(s->streamed);
    f.token_ids = s->ids;
    f.logprobs = s->logprobs;
    f.alternatives = s->alternatives;
    if (!f.alternatives.empty()) f.alternatives.resize(s->ids.size());
    f.prompt_logprobs = s->prompt_logprobs;
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

void Link::start_failed(RequestId id, const std::shared_ptr<RequestSink>& sink, const QString& message) {
    auto s = std::make_shared<Stream>();
    s->id = id;
    s->sink = sink;
    streams_[id] = s;
    finish(s, FinishReason::Error, message);
}

}  // namespace lorascope::ui::remote_detail
