// The window's second backend: a LoRAX server (or `lorascope-cli serve`) spoken to over HTTP, or
// an OpenAI-compatible one (vLLM), behind the same lorascope::Engine interface that the bridge,
// the panels, the board, the comparison view and export already use. Qt Network does the HTTP:
// /generate_stream with details (LoRAX) or /v1/completions streaming with logprobs (OpenAI), and
// /v1/chat/completions for a conversation in either (remote_chat.h), one
// stream per request; Cancel aborts the stream (the server cancels the request); connection
// errors are retried with backoff, HTTP errors are not (they quote the server's error_type).
// The API token goes only into the Authorization header: never into messages, logs or exports.
#pragma once

#include <QString>
#include <QUrl>

#include <functional>
#include <memory>
#include <string>

#include "lorascope/engine.h"

namespace lorascope::ui {

enum class RemoteDialect { Lorax, OpenAi };

struct RemoteEndpoint {
    QUrl url;                          // http(s)://host:port of the server
    RemoteDialect dialect = RemoteDialect::Lorax;
    QString api_token;                 // empty: none
    int timeout_ms = 30000;            // connect, and longest silence inside a stream
    int connect_attempts = 4;          // GET /info at creation: connection errors only; 250 ms, 500 ms, 1 s, ... apart
    // A stream's connection errors (before any data) are retried this long, 250 ms doubling up to
    // 4 s apart: a server that takes a few seconds to (re)start is waited for, not given up on
    // after four tries in under 2 s.
    int retry_for_ms = 30000;
};

// "http://..." or "https://..." (optionally "openai+http(s)://..." for the OpenAI dialect): a model
// location that names a server rather than a directory.
bool isRemoteLocation(const QString& location);
// Parses such a location; the token is not part of it (see RemoteCredentials).
RemoteEndpoint parseRemoteLocation(const QString& location);
// The location string for an endpoint (what the model panel shows and remembers; never the token).
QString remoteLocation(const QUrl& url, RemoteDialect dialect);

// Connects (GET /info for LoRAX, /v1/models for OpenAI, with the retries above) and returns an
// Engine whose requests stream from the server. Throws lorascope::Error naming the URL when the
// server cannot be reached or answers with an error.
std::unique_ptr<Engine> createRemoteEngine(const RemoteEndpoint& endpoint);

// API tokens typed into the model panel, in memory only, by location: the engine factory runs on
// a worker thread and only sees EngineOptions::model_dir, which must not carry the token.
class RemoteCredentials {
public:
    static void setToken(const QString& location, const QString& token);
    // The token typed for `location`, else the environment's LORASCOPE_API_TOKEN (empty: none).
    static QString token(const QString& location);
};

// The factory the window uses: remote locations become remote engines (with the token from
// RemoteCredentials), everything else goes to `local`.
std::unique_ptr<Engine> createEngineForLocation(const EngineOptions& options,
                                                const std::function<std::unique_ptr<Engine>(const EngineOptions&)>& local);

}  // namespace lorascope::ui
