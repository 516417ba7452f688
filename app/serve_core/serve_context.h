// What the routes and the requests of `lorascope-cli serve` read and count: the narrow state a
// server shares with them (no socket, no HTTP type), so that the protocol runs and is tested
// without a server.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "lorascope/engine.h"
#include "lorascope/local_adapters.h"
#include "lorascope/tokenizer.h"
#include "serve_metrics.h"
#include "serve_protocol.h"

namespace lorascope::serve {

using Clock = std::chrono::steady_clock;

// The HTTP front's bounds: every one is a defence against a client (issue 26), and each is
// enforced by the server, never by trusting a client to stop.
struct ServeLimits {
    int max_connections = 64;            // requests served at once (generation routes); more: 429
    int max_open_connections = 4096;     // sockets held, idle and slow ones included; past it the
                                         // longest-waiting idle or unfinished-header one is closed
    int backlog = 1024;                  // the kernel's accept queue (it caps it at somaxconn)
    int64_t max_body_bytes = 1 << 20;    // larger bodies: 413, also without Content-Length
    // Bodies being read, all connections together, counted as announced (Content-Length, or
    // max_body_bytes when chunked): past it the connection reading its body longest is closed for
    // the newcomer, so that clients that never finish their bodies cannot hold the memory.
    int64_t max_reading_bytes = int64_t(64) << 20;
    int64_t max_header_bytes = 16384;    // request line and headers together: 431 past it
    int max_header_fields = 100;         // 431 past it
    std::chrono::seconds request_timeout{30};      // one request's headers and body, in total
    std::chrono::seconds keep_alive_timeout{5};    // waiting for the first byte of a request
    std::chrono::seconds write_timeout{30};        // one write to a client that does not read
    int64_t max_stream_backlog_bytes = 1 << 20;    // a stream's unsent events; past it: cancelled
    // Each connection's kernel send buffer (SO_SNDBUF; Linux doubles it for its bookkeeping).
    // Left alone, Linux grows it up to tcp_wmem's maximum (4 MiB): a loopback client that stopped
    // reading took 2.99 MB before the server's send blocked (measured), kernel memory that every
    // slow client could pin beyond max_stream_backlog_bytes. 64 KiB still fills a 1 ms round trip
    // at 64 MB/s, far above a token stream's rate.
    int64_t send_buffer_bytes = 64 << 10;
    int workers = 2;                     // threads that parse, tokenize and submit request bodies
};

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                     // 0: any free port
    std::string api_token;               // empty: no authentication
    // --adapter-dir: requests may name adapter directories under it (adapter_source "local");
    // empty: they may not.
    std::string adapter_dir;
    ServeLimits limits;
    LatencyTargets goodput;              // --goodput-ttft-ms / --goodput-tpot-ms: what /metrics counts as goodput
};

// Counts a request from its body's arrival until its answer is written (streams: until the stream
// ends), so that a graceful shutdown waits for answers, not only for the engine.
class OpenRequest {
public:
    explicit OpenRequest(std::atomic<int64_t>& count) : count_(count) { ++count_; }
    ~OpenRequest() { --count_; }
    OpenRequest(const OpenRequest&) = delete;
    OpenRequest& operator=(const OpenRequest&) = delete;

private:
    std::atomic<int64_t>& count_;
};

struct ServeContext;

// One of --max-connections' slots, held by a generation request from its head to its last byte.
class ServingSlot {
public:
    ServingSlot() = default;
    explicit ServingSlot(ServeContext* context) : context_(context) {}
    ServingSlot(ServingSlot&& other) noexcept : context_(other.context_) { other.context_ = nullptr; }
    ServingSlot& operator=(ServingSlot&& other) noexcept;
    ~ServingSlot() { release(); }
    void release();
    explicit operator bool() const { return context_ != nullptr; }

private:
    ServeContext* context_ = nullptr;
};

// Owned by the server, outlives every request and connection.
struct ServeContext {
    ServeContext(Engine& engine_, ServedModel model_, const Tokenizer* tokenizer_, ServeOptions options_,
                 nlohmann::json info_)
        : engine(engine_), model(std::move(model_)), tokenizer(tokenizer_), options(std::move(options_)),
          info(std::move(info_)) {
        if (!options.adapter_dir.empty()) adapter_directory.emplace(options.adapter_dir);
    }

    Engine& engine;
    const ServedModel model;
    const Tokenizer* tokenizer;          // may be null: text prompts are then refused (422)
    const ServeOptions options;
    const nlohmann::json info;           // GET /info's body
    const std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>(options.goodput);
    std::optional<AdapterDirectory> adapter_directory;   // from options.adapter_dir; throws if it is not one

    std::atomic<bool> draining{false};   // new requests are answered 503
    std::atomic<int64_t> open_requests{0};
    std::atomic<uint64_t> completion_counter{0};   // OpenAI ids: cmpl-N

    // A slot among --max-connections for a request whose body has been read; empty when all are
    // taken. Taken only once the body is in, so that clients slow to send theirs hold none.
    ServingSlot try_take_slot();
    void release_slot();   // what ~ServingSlot calls
    // Bytes of bodies being read (ServeLimits::max_reading_bytes); false when `bytes` do not fit.
    bool try_reserve_reading(int64_t bytes);
    void release_reading(int64_t bytes);
    // Requests not yet answered in full, or still in the engine.
    int64_t requests_in_flight() const;

    // A parsed request made ready to submit: its local adapter loaded (load_local_adapter_for, one
    // load at a time, so that two requests naming one directory register it once), then fitted to
    // the budget (fit_to_budget). HttpError 422 when either refuses it.
    void prepare_request(ParsedRequest& request);

private:
    std::mutex local_adapters_mutex_;
    std::atomic<int64_t> serving_{0};
    std::atomic<int64_t> reading_bytes_{0};
};

}  // namespace lorascope::serve
