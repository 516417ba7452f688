// The remote backend's network half: one Link per remote engine, living on the engine's own
// thread with its QNetworkAccessManagers. It posts each request's stream, reads the server-sent
// events of either dialect into the request's sink, retries connection errors with backoff and
// ends every stream exactly once. RemoteEngine (remote_backend.cpp) calls it only on its thread.
#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QObject>
#include <QString>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/engine.h"
#include "remote/remote_backend.h"

namespace lorascope::ui::remote_detail {

using Clock = std::chrono::steady_clock;

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
        bool chat = false;          // /v1/chat/completions (remote_chat.h), whatever the dialect
        // LoRAX's /generate, answered whole: decoder_input_details (prompt log-probabilities),
        // which LoRAX does not stream. Its tokens are sent to the sink when the answer is in.
        bool whole = false;
        // OpenAI's /v1/completions asked with `logprobs: k` for alternatives: each token's
        // top_logprobs dict becomes its k most likely alternatives (0: none asked for).
        int64_t top_alternatives = 0;
        QByteArray buffer;          // what arrived of the event being read (capped: kMaxEventBytes)
        qsizetype scanned = 0;      // how far `buffer` is known to hold no event end
        QByteArray error_body;      // an HTTP error's body, its first kMaxErrorBody bytes
        std::vector<int64_t> ids;
        std::vector<float> logprobs;
        std::vector<std::vector<TokenAlternative>> alternatives;   // return_k_alternatives, per token
        std::vector<PromptTokenLogprob> prompt_logprobs;           // decoder_input_details' prefill
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
    Link(RemoteEndpoint endpoint, std::function<void(RequestId)> on_done);

    QNetworkRequest request_for(const QByteArray& path, bool streaming);

    // A blocking GET with the connection retries (used once, when the engine is created).
    QByteArray get_with_retries(const QByteArray& path);

    std::string where(const QByteArray& path) const;

    void start(std::shared_ptr<Stream> s);

    void send(const std::shared_ptr<Stream>& s);

    // Qt Network opens at most six HTTP/1.1 connections per server and manager and queues the rest
    // (Qt 6.4 has no setting for it; QHttp1Configuration came with 6.5). A queued request's transfer
    // timeout runs while it waits, so the seventh stream to a busy server failed after timeout_ms
    // without having been sent, and the server never batched more than six of the window's
    // requests. Each manager carries at most six streams; more streams get another manager. The
    // first is the one that asked for /info, so that its kept-alive connection serves the first
    // stream rather than holding one of the server's connections idle.
    QNetworkAccessManager* manager_for(const std::shared_ptr<Stream>& s);

    void cancel(RequestId id);

    void cancel_all();

    // Takes what the reply has and reads each whole event; past kMaxEventBytes without an event's
    // end the stream fails (a server cannot grow the window's memory without bound).
    void read_events(const std::shared_ptr<Stream>& s, QNetworkReply* reply);
    void parse_events(const std::shared_ptr<Stream>& s);
    void dispatch_event(const std::shared_ptr<Stream>& s, const QByteArray& event);

    void emit_token(const std::shared_ptr<Stream>& s, int64_t id, const QString& text, float logprob, bool special,
                    std::vector<TokenAlternative> alternatives = {});

    void on_lorax_event(const std::shared_ptr<Stream>& s, const QJsonObject& o);
    // A whole /generate answer: its details' tokens (with their alternative_tokens), its prefill.
    void on_lorax_whole(const std::shared_ptr<Stream>& s, const QJsonObject& o);
    // LoRAX's Token as the sink gets it: alternative_tokens among its fields when asked for.
    void emit_lorax_token(const std::shared_ptr<Stream>& s, const QJsonObject& token);
    // What a LoRAX answer says when it ends: text, finish reason, token counts.
    void take_lorax_details(const std::shared_ptr<Stream>& s, const QJsonValue& text, const QJsonObject& details);

    void on_openai_event(const std::shared_ptr<Stream>& s, const QJsonObject& o);

    void abort_with(const std::shared_ptr<Stream>& s, const QString& message) { finish(s, FinishReason::Error, message); }

    void finish(const std::shared_ptr<Stream>& s, FinishReason reason, const QString& error);

    void start_failed(RequestId id, const std::shared_ptr<RequestSink>& sink, const QString& message);

    RemoteEndpoint endpoint_;

    // LoRAX's and vLLM's events are a token each, a few hundred bytes; the final one repeats the
    // text, so a generous cap still passes a long generation's.
    static constexpr qsizetype kMaxEventBytes = 1 << 20;
    static constexpr qsizetype kMaxErrorBody = 64 << 10;

private:
    void on_ready_read(const std::shared_ptr<Stream>& s, QNetworkReply* reply);
    void on_finished(const std::shared_ptr<Stream>& s, QNetworkReply* reply);
    // The sink's on_retry: attempt n >= 1 when the n-th retry is scheduled, 0 once data arrives again.
    void tell_retry(const std::shared_ptr<Stream>& s, int attempt, const QString& reason);
    // Runs a slot's body; an exception ends that stream with its message instead of escaping
    // into Qt's event loop (which aborts the process).
    template <typename F>
    void guarded(const std::shared_ptr<Stream>& s, F&& body);
    static constexpr int kStreamsPerManager = 6;
    QNetworkAccessManager nam_;                           // /info and /v1/models, and the first streams
    std::vector<QNetworkAccessManager*> stream_managers_;  // nam_, then more as needed (children of the link)
    std::map<RequestId, std::shared_ptr<Link::Stream>> streams_;
    std::function<void(RequestId)> on_done_;
};

}  // namespace lorascope::ui::remote_detail
