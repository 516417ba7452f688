// One client connection of `lorascope-cli serve`, on the server's one I/O thread: Boost.Beast's
// HTTP/1.1 parser over an Asio socket, with every wait bounded by a deadline of its own:
//   waiting for a request's first byte    --keep-alive-seconds (then the connection is closed)
//   its headers and body, together        --request-timeout-seconds from that first byte
//   each write to a client                --write-timeout-seconds
// The head is decided before any byte of the body is read (http_routes.h); a refusal is written
// and the connection closed without reading the body (a lingering close, so that the client sees
// the answer rather than a reset). While a request runs, a read stays pending on the socket: a
// client that goes away is noticed at once and its request cancelled in the engine.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http_routes.h"
#include "serve_context.h"

namespace lorascope::serve {

// Posts work to the I/O thread for as long as it exists: the engine thread and the workers hold
// one, and the server detaches it before its io_context goes away.
class IoPoster {
public:
    explicit IoPoster(boost::asio::io_context& io) : io_(&io) {}
    void post(std::function<void()> work);
    void detach();

private:
    std::mutex mutex_;
    boost::asio::io_context* io_;
};

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// A parser for one request under the server's limits: its head in bytes (431 past it), its body in
// bytes (413). The connection and the fuzz target of the request path make theirs here.
void bound_parser(RequestParser& parser, const ServeLimits& limits);

// What a connection needs from its server.
class ConnectionHost {
public:
    virtual ~ConnectionHost() = default;
    virtual const Routes& routes() const = 0;
    virtual ServeContext& context() = 0;
    virtual std::shared_ptr<IoPoster> poster() = 0;
    // Runs `job` on a worker thread (parsing, tokenizing, submitting a body).
    virtual void run_on_worker(std::function<void()> job) = 0;
    virtual void on_closed(class Connection& connection) = 0;
    // Reserves `bytes` of body reading (ServeLimits::max_reading_bytes) for `asking`, closing the
    // connections reading their bodies longest to make room; false when even that is not enough.
    virtual bool reserve_reading(Connection& asking, int64_t bytes) = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(boost::asio::ip::tcp::socket socket, ConnectionHost& host);
    ~Connection();

    void start();
    // Closes now; a request still running is cancelled in the engine. `why` (a fixed word, or
    // null) is counted in lorascope_connections_closed.
    void close(const char* why);
    // Not serving a request: waiting for one, or reading one's head or body. The server closes
    // these first (at its open-connection cap, and when it drains).
    bool between_requests() const;
    // Kept alive after an answer and waiting for nothing the client has sent: what a drain closes.
    // A fresh connection, or one whose request is arriving, is left to read its head, which the
    // drain answers 503: closing it could drop a request already on its way (a client then reads a
    // reset where it should read why).
    bool kept_alive_idle() const { return state_ == State::Idle && answered_ && buffer_.size() == 0; }
    bool reading_body() const { return state_ == State::Body; }
    Clock::time_point waiting_since() const { return waiting_since_; }

private:
    enum class State { Idle, Head, Body, Working, Reply, Streaming, Lingering, Closed };

    void next_request();
    void begin_request();
    void refuse(const boost::system::error_code& ec);
    void on_head(const boost::system::error_code& ec);
    void read_body();
    void on_body(const boost::system::error_code& ec);
    void on_worked(BodyOutcome outcome);
    void on_events();
    void watch();
    void on_read(const boost::system::error_code& ec, size_t n);

    void send_reply(const Reply& reply);
    void start_stream();
    void send(std::string bytes);
    void flush();
    void on_written(const boost::system::error_code& ec);
    void end_exchange();
    void linger();
    void arm(boost::asio::steady_timer& timer, Clock::duration after, const char* why);
    void arm_keep_alive_comment();
    void release_reading();

    ConnectionHost& host_;
    const ServeLimits& limits_;
    boost::asio::ip::tcp::socket socket_;
    boost::asio::steady_timer deadline_, write_deadline_, comment_timer_;
    boost::beast::flat_buffer buffer_;
    std::optional<RequestParser> parser_;
    State state_ = State::Idle;
    Clock::time_point waiting_since_ = Clock::now(), received_;
    Route route_ = Route::None;
    ServingSlot slot_;
    int64_t reading_reserved_ = 0;   // of ServeContext's body-reading bytes
    std::unique_ptr<Generation> generation_;
    bool client_keep_alive_ = true, close_after_ = false, answered_ = false, reading_ = false, writing_ = false, stream_done_ = false;
    std::string out_, writing_bytes_;
    size_t lingered_ = 0;   // bytes discarded while lingering
    char discard_[4096];
};

}  // namespace lorascope::serve
