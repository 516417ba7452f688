// Connections of `lorascope-cli serve`: the task queue that bounds how many are served at once
// (the rest are answered 429 by refusing threads), and the watch that tells a non-streaming
// handler that its client has gone away.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "serve_metrics.h"

namespace lorascope::cli::serve {

// True on the threads that answer connections past --max-connections: every request they read is
// refused with 429. The body is read first (the handlers run as usual) because closing a socket
// with unread input makes the kernel reset the connection, and the client would see a reset
// instead of the refusal.
bool refusing_this_connection();

// A fixed set of threads running queued jobs.
class WorkerPool {
public:
    WorkerPool(size_t threads, bool refusing);
    ~WorkerPool() { shutdown(); }
    void push(std::function<void()> job);
    void shutdown();

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> jobs_;
    bool shutdown_ = false;
    std::vector<std::thread> threads_;
};

// httplib hands every accepted connection to a task queue. This one serves up to
// `max_connections` at once, each on its own thread, and passes the rest to two refusing threads.
class ConnectionQueue final : public httplib::TaskQueue {
public:
    ConnectionQueue(size_t max_connections, std::shared_ptr<Metrics> metrics);
    void enqueue(std::function<void()> fn) override;
    void shutdown() override;

private:
    std::mutex mutex_;
    size_t max_;
    size_t busy_ = 0;
    std::shared_ptr<Metrics> metrics_;
    WorkerPool serving_, refusing_;
};

// Whether the client of a request being handled is still there.
//
// Later cpp-httplib releases give handlers `Request::is_connection_closed()`; Debian 12's 0.11.4
// has no such member, and its handlers never see the connection's socket (the library is compiled,
// its Stream and socket helpers are not in the header, and Server::process_and_close_socket, the
// one place that holds the socket, is private). The socket is found instead by the addresses
// httplib does give the request: the one TCP socket of this process whose local end is
// local_addr:local_port and whose peer is remote_addr:remote_port. That 4-tuple names one
// connection, and its descriptor stays open (and so cannot be reused) until the handler returns,
// because httplib closes the socket only after the handler. It is looked up once, at the first
// check. A peer that closed shows as readable with nothing to read (recv() == 0) or as a socket
// error, the same test as the newer is_connection_closed; a pipelined next request shows as data,
// so the client counts as present.
class ClientConnection {
public:
    explicit ClientConnection(const httplib::Request& request);
    // True once the peer has closed (or reset) the connection. False when the socket cannot be
    // found: the handler then runs to completion, as before.
    bool closed();

private:
    std::string remote_addr_, local_addr_;
    int remote_port_, local_port_;
    std::optional<int> fd_;
    bool looked_up_ = false;
};

}  // namespace lorascope::cli::serve
