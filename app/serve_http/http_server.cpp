#include "http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "lorascope/error.h"

namespace lorascope::serve {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

WorkerPool::WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i)
        threads_.emplace_back([this] {
            for (;;) {
                std::function<void()> job;
                {
                    std::unique_lock<std::mutex> lock(mutex_);
                    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
                    if (stopping_) return;
                    job = std::move(jobs_.front());
                    jobs_.pop_front();
                }
                job();   // Routes::on_body answers every failure itself
            }
        });
}

void WorkerPool::push(std::function<void()> job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
        jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void WorkerPool::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        jobs_.clear();
    }
    wake_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
}

LoraxServer::LoraxServer(Engine& engine, ServedModel model, const Tokenizer* tokenizer, ServeOptions options,
                         nlohmann::json info)
    : context_(engine, std::move(model), tokenizer, std::move(options), std::move(info)),
      routes_(context_),
      io_(std::make_unique<asio::io_context>(1)),
      acceptor_(std::make_unique<tcp::acceptor>(*io_)),
      accept_retry_(std::make_unique<asio::steady_timer>(*io_)),
      poster_(std::make_shared<IoPoster>(*io_)),
      workers_(std::max(1, context_.options.limits.workers)) {
    const ServeLimits& limits = context_.options.limits;
    if (limits.max_connections < 1) throw Error(ErrorKind::InvalidArgument, "--max-connections must be >= 1");
    if (limits.max_body_bytes < 1) throw Error(ErrorKind::InvalidArgument, "--max-body-bytes must be >= 1");
    std::weak_ptr<Metrics> weak = context_.metrics;
    engine.set_stats_listener([weak](const StepStats& s) {
        if (auto m = weak.lock()) m->on_step(s);
    });
}

LoraxServer::~LoraxServer() {
    context_.engine.set_stats_listener(nullptr);
    workers_.stop();        // no job may post to, or run routes for, a server going away
    poster_->detach();      // the engine's notifications of requests still running go nowhere
    connections_.clear();
    acceptor_.reset();
    accept_retry_.reset();
    io_.reset();            // handlers still queued release their connections here
}

int LoraxServer::bind() {
    const ServeOptions& o = context_.options;
    const std::string where = o.host + ":" + std::to_string(o.port);
    if (o.port < 0 || o.port > 65535) throw Error(ErrorKind::InvalidArgument, "--port must be in 0..65535");
    error_code ec;
    tcp::resolver resolver(*io_);
    const auto endpoints = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
    if (ec || endpoints.empty()) throw Error(ErrorKind::InvalidArgument, where, "cannot listen: bad host (" + ec.message() + ")");
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    acceptor_->open(endpoint.protocol(), ec);
    if (!ec) acceptor_->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_->bind(endpoint, ec);
    if (!ec) acceptor_->listen(o.limits.backlog, ec);
    if (ec) throw Error(ErrorKind::InvalidArgument, where, "cannot listen: " + ec.message());
    return acceptor_->local_endpoint().port();
}

bool LoraxServer::run() {
    accept();
    io_->run();
    return !listen_failed_;
}

void LoraxServer::accept() {
    acceptor_->async_accept([this](const error_code& ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;   // draining or stopped
        if (ec) {
            // Out of descriptors (EMFILE) or memory: try again shortly rather than spin.
            if (ec != asio::error::no_descriptors && ec != asio::error::no_buffer_space &&
                ec != asio::error::connection_aborted && ec != asio::error::no_memory) {
                listen_failed_ = true;
                stop();
                return;
            }
            accept_retry_->expires_after(std::chrono::milliseconds(50));
            accept_retry_->async_wait([this](const error_code& e) {
                if (!e) accept();
            });
            return;
        }
        admit(std::move(socket));
        accept();
    });
}

// At the cap, the connection waiting longest without being served makes room; when every one is
// being served, the newcomer is closed (the kernel's queue behind it is bounded by the backlog).
void LoraxServer::admit(tcp::socket socket) {
    if (static_cast<int64_t>(connections_.size()) >= context_.options.limits.max_open_connections) {
        auto victim = oldest([](const Connection& c) { return c.between_requests(); }, nullptr);
        if (!victim) {
            context_.metrics->on_connection_closed("at_capacity");
            error_code ignored;
            socket.close(ignored);
            return;
        }
        victim->close("evicted");
    }
    auto connection = std::make_shared<Connection>(std::move(socket), *this);
    connections_.emplace(connection.get(), connection);
    publish_open_count();
    connection->start();
}

std::shared_ptr<Connection> LoraxServer::oldest(const std::function<bool(const Connection&)>& pick,
                                                const Connection* except) {
    std::shared_ptr<Connection> found;
    for (auto& [raw, weak] : connections_) {
        auto c = weak.lock();
        if (c && c.get() != except && pick(*c) && (!found || c->waiting_since() < found->waiting_since())) found = c;
    }
    return found;
}

bool LoraxServer::reserve_reading(Connection& asking, int64_t bytes) {
    if (bytes > context_.options.limits.max_reading_bytes) return false;
    while (!context_.try_reserve_reading(bytes)) {
        auto victim = oldest([](const Connection& c) { return c.reading_body(); }, &asking);
        if (!victim) return false;
        victim->close("evicted");
    }
    return true;
}

void LoraxServer::on_closed(Connection& connection) {
    connections_.erase(&connection);
    publish_open_count();
}

void LoraxServer::publish_open_count() { context_.metrics->set_open_connections(static_cast<int64_t>(connections_.size())); }

void LoraxServer::close_kept_alive() {
    std::vector<std::shared_ptr<Connection>> idle;
    for (auto& [raw, weak] : connections_)
        if (auto c = weak.lock(); c && c->kept_alive_idle()) idle.push_back(std::move(c));
    for (auto& c : idle) c->close("draining");
}

// The listener stays open, so that health checks and late clients get a 503 rather than a refused
// connection (a load balancer then knows why); every connection is closed after its answer.
void LoraxServer::begin_drain() {
    context_.draining = true;
    asio::post(*io_, [this] { close_kept_alive(); });
}

void LoraxServer::stop() {
    context_.draining = true;
    asio::post(*io_, [this] {
        error_code ignored;
        acceptor_->close(ignored);
        accept_retry_->cancel();
        std::vector<std::shared_ptr<Connection>> all;
        for (auto& [raw, weak] : connections_)
            if (auto c = weak.lock()) all.push_back(std::move(c));
        for (auto& c : all) c->close(nullptr);
        io_->stop();
    });
}

}  // namespace lorascope::serve
