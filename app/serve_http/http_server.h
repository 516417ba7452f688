// The HTTP side of `lorascope-cli serve`: LoRAX's routes over one Engine, on Boost.Beast/Asio.
// One I/O thread serves every connection (a slow or idle one costs a few kilobytes and a timer,
// not a thread), a few workers parse, tokenize and submit request bodies, and the engine's
// continuous batches run every request. Why Beast and not GNU libmicrohttpd: docs/serve.md.
//
// Bounded everywhere (ServeLimits): the kernel's accept queue, the sockets held (past the cap the
// longest-waiting connection that is not being served is closed for the newcomer), the requests
// served at once (429 past --max-connections), each request's head and body in bytes and in time,
// each write, each stream's unsent events. Shutdown: begin_drain() closes the kept-alive idle
// connections and answers every request whose head arrives from then on 503 (then closes its
// connection); stop() closes everything and returns run() at once, whatever the clients do.
#pragma once

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http_connection.h"
#include "http_routes.h"
#include "serve_context.h"

namespace boost::asio {
class io_context;
}

namespace lorascope::serve {

// Threads running jobs one at a time each; the queue is bounded by its callers (one job per
// connection being served, and at most --max-connections of those).
class WorkerPool {
public:
    explicit WorkerPool(int threads);
    ~WorkerPool() { stop(); }
    void push(std::function<void()> job);
    void stop();   // finishes the jobs running, drops the rest, joins

private:
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

class LoraxServer final : public ConnectionHost {
public:
    // `engine` and `tokenizer` (may be null) must outlive the server. `info` is GET /info's body.
    LoraxServer(Engine& engine, ServedModel model, const Tokenizer* tokenizer, ServeOptions options,
                nlohmann::json info);
    ~LoraxServer() override;
    LoraxServer(const LoraxServer&) = delete;
    LoraxServer& operator=(const LoraxServer&) = delete;

    // Binds and listens; returns the port. Throws lorascope::Error naming host:port.
    int bind();
    // Serves on the calling thread until stop(). Returns false when the listening socket failed.
    bool run();
    // Thread-safe. New requests are answered 503 from now on, kept-alive idle connections are
    // closed, requests running go on (each connection closes after its answer).
    void begin_drain();
    // Thread-safe. Closes every connection (their requests are cancelled) and makes run() return.
    void stop();
    int64_t requests_in_flight() const { return context_.requests_in_flight(); }

    // ConnectionHost
    const Routes& routes() const override { return routes_; }
    ServeContext& context() override { return context_; }
    std::shared_ptr<IoPoster> poster() override { return poster_; }
    void run_on_worker(std::function<void()> job) override { workers_.push(std::move(job)); }
    void on_closed(Connection& connection) override;
    bool reserve_reading(Connection& asking, int64_t bytes) override;

private:
    void accept();
    void admit(boost::asio::ip::tcp::socket socket);
    void close_kept_alive();
    // The connection that has waited longest among those `pick` accepts (not `except`), or null.
    std::shared_ptr<Connection> oldest(const std::function<bool(const Connection&)>& pick, const Connection* except);
    void publish_open_count();

    ServeContext context_;
    Routes routes_;
    std::unique_ptr<boost::asio::io_context> io_;
    std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
    std::unique_ptr<boost::asio::steady_timer> accept_retry_;
    std::shared_ptr<IoPoster> poster_;
    WorkerPool workers_;
    std::unordered_map<Connection*, std::weak_ptr<Connection>> connections_;   // I/O thread only
    bool listen_failed_ = false;
};

}  // namespace lorascope::serve
