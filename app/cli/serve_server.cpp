#include "serve_server.h"

#include <httplib.h>

#include <sys/socket.h>

#include "lorascope/error.h"
#include "serve_connection.h"
#include "serve_routes.h"

namespace lorascope::cli::serve {

using nlohmann::json;

namespace {

// cpp-httplib 0.11 listens with a backlog of 5 (compiled into Debian's library): a crowd of clients
// connecting at once would overflow the kernel's accept queue. listen() again on the bound socket
// widens it (Linux takes the new backlog).
class WideBacklogServer final : public httplib::Server {
public:
    bool widen_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace

LoraxServer::LoraxServer(Engine& engine, ServedModel model, const Tokenizer* tokenizer, ServeOptions options, json info)
    : engine_(engine), model_(std::move(model)), tokenizer_(tokenizer), options_(std::move(options)),
      info_(std::move(info)), metrics_(std::make_shared<Metrics>()),
      stopping_(std::make_shared<std::atomic<bool>>(false)), http_(std::make_unique<WideBacklogServer>()) {
    if (options_.max_connections < 1) throw Error(ErrorKind::InvalidArgument, "--max-connections must be >= 1");
    if (options_.max_body_bytes < 1) throw Error(ErrorKind::InvalidArgument, "--max-body-bytes must be >= 1");
    std::weak_ptr<Metrics> weak = metrics_;
    engine_.set_stats_listener([weak](const StepStats& s) {
        if (auto m = weak.lock()) m->on_step(s);
    });
    const size_t max_connections = static_cast<size_t>(options_.max_connections);
    auto metrics = metrics_;
    http_->new_task_queue = [max_connections, metrics] { return new ConnectionQueue(max_connections, metrics); };
    http_->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
    http_->set_keep_alive_timeout(5);
    http_->set_read_timeout(30);
    http_->set_write_timeout(30);
    routes_ = std::make_unique<Routes>(*this);
    routes_->install(*http_);
}

LoraxServer::~LoraxServer() {
    stop();
    engine_.set_stats_listener(nullptr);
}

int LoraxServer::bind() {
    const std::string where = options_.host + ":" + std::to_string(options_.port);
    if (options_.port < 0 || options_.port > 65535) throw Error(ErrorKind::InvalidArgument, "--port must be in 0..65535");
    int port = options_.port;
    if (port == 0) {
        port = http_->bind_to_any_port(options_.host);
        if (port <= 0) throw Error(ErrorKind::InvalidArgument, where, "cannot listen (bad host, or no free port)");
    } else if (!http_->bind_to_port(options_.host, options_.port)) {
        throw Error(ErrorKind::InvalidArgument, where, "cannot listen (address in use, or bad host)");
    }
    static_cast<WideBacklogServer&>(*http_).widen_backlog(1024);
    return port;
}

bool LoraxServer::run() { return http_->listen_after_bind(); }

void LoraxServer::begin_drain() { draining_ = true; }

void LoraxServer::stop() {
    *stopping_ = true;
    if (http_) http_->stop();
}

}  // namespace lorascope::cli::serve
