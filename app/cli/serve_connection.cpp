#include "serve_connection.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace lorascope::cli::serve {

namespace {

thread_local bool t_refusing = false;

// An address as httplib writes it into Request::remote_addr / local_addr (getnameinfo, numeric).
bool numeric_address(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, p, sizeof p,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    host = h;
    port = std::atoi(p);
    return true;
}

bool socket_ends_are(int fd, const std::string& remote, int remote_port, const std::string& local, int local_port) {
    int type = 0;
    socklen_t type_len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) return false;
    sockaddr_storage peer{}, self{};
    socklen_t peer_len = sizeof peer, self_len = sizeof self;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
    std::string host;
    int port = -1;
    if (!numeric_address(peer, peer_len, host, port) || port != remote_port || host != remote) return false;
    if (local_port <= 0) return true;   // httplib did not say: the peer alone decides
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &self_len) != 0) return false;
    return numeric_address(self, self_len, host, port) && port == local_port && (local.empty() || host == local);
}

}  // namespace

bool refusing_this_connection() { return t_refusing; }

WorkerPool::WorkerPool(size_t threads, bool refusing) {
    for (size_t i = 0; i < threads; ++i)
        threads_.emplace_back([this, refusing] {
            t_refusing = refusing;
            for (;;) {
                std::function<void()> job;
                {
                    std::unique_lock<std::mutex> lock(mutex_);
                    cv_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
                    if (jobs_.empty()) return;
                    job = std::move(jobs_.front());
                    jobs_.pop_front();
                }
                try {
                    job();
                } catch (...) {
                    // httplib answers the request's own exceptions; nothing may escape a worker.
                }
            }
        });
}

void WorkerPool::push(std::function<void()> job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
}

void WorkerPool::shutdown() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        shutdown_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

ConnectionQueue::ConnectionQueue(size_t max_connections, std::shared_ptr<Metrics> metrics)
    : max_(max_connections), metrics_(std::move(metrics)), serving_(max_connections, false), refusing_(2, true) {}

void ConnectionQueue::enqueue(std::function<void()> fn) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (busy_ >= max_) {
            metrics_->on_connection_refused();
            refusing_.push(std::move(fn));
            return;
        }
        metrics_->set_connections(static_cast<int64_t>(++busy_));
    }
    serving_.push([this, fn = std::move(fn)] {
        try {
            fn();
        } catch (...) {
        }
        std::lock_guard<std::mutex> lock(mutex_);
        metrics_->set_connections(static_cast<int64_t>(--busy_));
    });
}

void ConnectionQueue::shutdown() {
    serving_.shutdown();
    refusing_.shutdown();
}

ClientConnection::ClientConnection(const httplib::Request& request)
    : remote_addr_(request.remote_addr), local_addr_(request.local_addr), remote_port_(request.remote_port),
      local_port_(request.local_port) {}

bool ClientConnection::closed() {
    if (!looked_up_) {
        looked_up_ = true;
        if (remote_port_ <= 0) return false;
        if (DIR* dir = opendir("/proc/self/fd")) {
            while (dirent* entry = readdir(dir)) {
                char* end = nullptr;
                const long fd = std::strtol(entry->d_name, &end, 10);
                if (end == entry->d_name || *end != '\0') continue;
                if (socket_ends_are(static_cast<int>(fd), remote_addr_, remote_port_, local_addr_, local_port_)) {
                    fd_ = static_cast<int>(fd);
                    break;
                }
            }
            closedir(dir);
        }
    }
    if (!fd_) return false;
    pollfd p{*fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 0);
    if (ready <= 0) return false;   // nothing to read: the client is waiting for its answer
    if (p.revents & (POLLERR | POLLNVAL)) return true;
    char byte;
    const ssize_t n = ::recv(*fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return false;        // a pipelined next request: the client is there
    if (n == 0) return true;        // end of stream: the client closed its end
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace lorascope::cli::serve
