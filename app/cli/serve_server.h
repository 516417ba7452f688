// The HTTP side of `lorascope-cli serve`: LoRAX's routes over one Engine (cpp-httplib, one thread
// per connection). Every request is one Engine::submit, so concurrent requests share the engine's
// continuous batches; a request whose client goes away (streaming or not) is cancelled in the engine.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "lorascope/engine.h"
#include "lorascope/tokenizer.h"
#include "serve_metrics.h"
#include "serve_protocol.h"

namespace httplib {
class Server;
}

namespace lorascope::cli::serve {

class Routes;

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                    // 0: any free port (bind() returns it)
    std::string api_token;              // empty: no authentication
    int max_connections = 64;           // served at once; more are answered 429 (LoRAX's "overloaded")
    int64_t max_body_bytes = 1 << 20;   // larger request bodies are answered 413
};


class LoraxServer {
public:
    // `engine`, `tokenizer` (may be null) must outlive the server. `info` is GET /info's body.
    LoraxServer(Engine& engine, ServedModel model, const Tokenizer* tokenizer, ServeOptions options,
                nlohmann::json info);
    ~LoraxServer();
    LoraxServer(const LoraxServer&) = delete;
    LoraxServer& operator=(const LoraxServer&) = delete;

    // Binds the listening socket; returns the port. Throws lorascope::Error naming host:port.
    int bind();
    // Serves until stop(). Returns false when the listening socket failed.
    bool run();
    // New requests are answered 503 from now on; requests already running go on.
    void begin_drain();
    // Ends every stream (their engine requests are cancelled) and makes run() return.
    void stop();
    // Requests not yet answered in full, or still in the engine.
    int64_t requests_in_flight() const { return std::max<int64_t>(*open_requests_, metrics_->requests_in_engine()); }

private:
    friend class Routes;  // the routes read the server's state (serve_routes.h)

    Engine& engine_;
    ServedModel model_;
    const Tokenizer* tokenizer_;
    ServeOptions options_;
    nlohmann::json info_;
    std::shared_ptr<Metrics> metrics_;
    std::shared_ptr<std::atomic<bool>> stopping_;
    std::shared_ptr<std::atomic<int64_t>> open_requests_ = std::make_shared<std::atomic<int64_t>>(0);
    std::atomic<bool> draining_{false};
    std::atomic<uint64_t> completion_counter_{0};
    std::unique_ptr<Routes> routes_;                // before http_: its handlers go first
    std::unique_ptr<httplib::Server> http_;
};

}  // namespace lorascope::cli::serve
