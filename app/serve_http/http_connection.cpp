#include "http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>

#include <cstdio>

namespace lorascope::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

namespace {

// How long a refused client may go on sending what it had started (its body) before the server
// closes: enough for the client to read the refusal instead of a reset, bounded whatever it does.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kLingerBytes = size_t(1) << 20;
// While a stream has nothing to send: a comment line every 5 s (LoRAX's axum keep-alive does too).
constexpr auto kKeepAliveComment = std::chrono::seconds(5);
constexpr size_t kWatchRead = 4096;

std::string status_line(int status) {
    const auto reason = http::obsolete_reason(static_cast<http::status>(status));
    return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason.data(), reason.size()) + "\r\n";
}

std::string chunk(const std::string& bytes) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
    return size + bytes + "\r\n";
}

bool aborted(const error_code& ec) { return ec == asio::error::operation_aborted; }

// The parser refused what it read (not: the client went away, or the deadline closed the socket).
bool malformed(const error_code& ec) {
    return ec.category() == http::make_error_code(http::error::bad_version).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

void bound_parser(RequestParser& parser, const ServeLimits& limits) {
    parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
    parser.body_limit(static_cast<uint64_t>(limits.max_body_bytes));
}

void IoPoster::post(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (io_) asio::post(*io_, std::move(work));
}

void IoPoster::detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    io_ = nullptr;
}

Connection::Connection(asio::ip::tcp::socket socket, ConnectionHost& host)
    : host_(host), limits_(host.context().options.limits), socket_(std::move(socket)),
      deadline_(socket_.get_executor()), write_deadline_(socket_.get_executor()), comment_timer_(socket_.get_executor()) {
    error_code ignored;
    socket_.set_option(asio::ip::tcp::no_delay(true), ignored);   // SSE events go out as they come
    socket_.set_option(asio::socket_base::send_buffer_size(static_cast<int>(limits_.send_buffer_bytes)), ignored);
}

Connection::~Connection() = default;

void Connection::start() { next_request(); }

bool Connection::between_requests() const {
    return state_ == State::Idle || state_ == State::Head || state_ == State::Body || state_ == State::Lingering;
}

void Connection::arm(asio::steady_timer& timer, Clock::duration after, const char* why) {
    timer.expires_after(after);
    timer.async_wait([self = shared_from_this(), &timer, why](const error_code& ec) {
        // A timer re-armed after this wait was queued has moved its expiry: only a real expiry closes.
        if (!ec && timer.expiry() <= Clock::now()) self->close(why);
    });
}

// ------------------------------------------------------------------------------- reading requests

// The next request: from bytes already read (a pipelined request), or from the first byte to come,
// waited for at most --keep-alive-seconds. A read left pending by the last exchange goes on.
void Connection::next_request() {
    state_ = State::Idle;
    waiting_since_ = Clock::now();
    if (buffer_.size() > 0) {
        error_code ignored;
        if (reading_) socket_.cancel(ignored);   // on_read resumes with what is buffered
        else begin_request();
        return;
    }
    arm(deadline_, limits_.keep_alive_timeout, "idle");
    if (!reading_) watch();
}

void Connection::begin_request() {
    state_ = State::Head;
    received_ = Clock::now();
    arm(deadline_, limits_.request_timeout, "timeout");   // headers and body together
    parser_.emplace();
    bound_parser(*parser_, limits_);
    reading_ = true;
    http::async_read_header(socket_, buffer_, *parser_, [self = shared_from_this()](const error_code& ec, size_t) {
        self->reading_ = false;
        self->on_head(ec);
    });
}

// What reading a request failed on: its head past the header limit (431), an announced or a
// received body past the body limit (413), something else the parser refused (400), or the
// client or the deadline closing the socket.
void Connection::refuse(const error_code& ec) {
    if (ec == http::error::header_limit) {
        host_.context().metrics->on_connection_closed("header_too_large");
        send_reply(host_.routes().refusal(431));
    } else if (ec == http::error::body_limit) {
        host_.context().metrics->on_request_refused("payload_too_large");
        send_reply(host_.routes().refusal(413));
    } else if (malformed(ec)) {
        send_reply(host_.routes().refusal(400));
    } else {
        close(nullptr);
    }
}

void Connection::on_head(const error_code& ec) {
    if (state_ == State::Closed) return;
    if (ec) {
        refuse(ec);
        return;
    }
    HeadDecision decision = host_.routes().on_head(parser_->get().base());
    client_keep_alive_ = parser_->get().keep_alive();
    route_ = decision.route;
    if (decision.reply) {
        send_reply(*decision.reply);
        return;
    }
    if (!host_.reserve_reading(*this, decision.body_bytes)) {
        host_.context().metrics->on_request_refused("overloaded");
        Reply busy = error_reply(HttpError(503, "overloaded", "too many request bodies being received; retry later"));
        busy.close = true;
        send_reply(busy);
        return;
    }
    reading_reserved_ = decision.body_bytes;
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {   // the client waits for a go-ahead
        send("HTTP/1.1 100 Continue\r\n\r\n");
        state_ = State::Body;
    }
    read_body();
}

void Connection::read_body() {
    state_ = State::Body;
    reading_ = true;
    http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](const error_code& ec, size_t) {
        self->reading_ = false;
        self->on_body(ec);
    });
}

void Connection::on_body(const error_code& ec) {
    if (state_ == State::Closed) return;
    if (ec) {
        release_reading();
        refuse(ec);
        return;
    }
    deadline_.cancel();
    release_reading();
    std::optional<Reply> refused;
    slot_ = host_.routes().take_slot(refused);
    if (refused) {
        send_reply(*refused);
        return;
    }
    state_ = State::Working;
    std::string body = std::move(parser_->get().body());
    parser_.reset();
    watch();
    // Parsing, tokenizing and submitting run on a worker, never on this thread.
    std::weak_ptr<Connection> weak = shared_from_this();
    std::shared_ptr<IoPoster> poster = host_.poster();
    const Routes& routes = host_.routes();
    const Route route = route_;
    const Clock::time_point received = received_;
    host_.run_on_worker([weak, poster, &routes, route, received, body = std::move(body)] {
        auto notify = [weak, poster] {
            poster->post([weak] {
                if (auto self = weak.lock()) self->on_events();
            });
        };
        auto outcome = std::make_shared<BodyOutcome>(routes.on_body(route, body, received, notify));
        poster->post([weak, outcome] {
            if (auto self = weak.lock()) self->on_worked(std::move(*outcome));
        });
    });
}

// A read on the socket while a request runs (and while the connection waits for the next one):
// bytes are kept for the next request, up to the header limit; an end of stream or an error is a
// client that went away.
void Connection::watch() {
    if (reading_ || state_ == State::Closed) return;
    if (buffer_.size() >= static_cast<size_t>(limits_.max_header_bytes)) return;   // enough pipelined
    reading_ = true;
    socket_.async_read_some(buffer_.prepare(kWatchRead), [self = shared_from_this()](const error_code& ec, size_t n) {
        self->reading_ = false;
        self->on_read(ec, n);
    });
}

void Connection::on_read(const error_code& ec, size_t n) {
    if (state_ == State::Closed) return;
    if (state_ == State::Lingering) {
        if (ec && !aborted(ec)) close(nullptr);
        else linger();
        return;
    }
    if (aborted(ec) && state_ == State::Idle) {   // cancelled by next_request: a request is buffered
        begin_request();
        return;
    }
    if (ec) {
        if (generation_) generation_->cancel(/*client_gone=*/true);
        close(nullptr);
        return;
    }
    buffer_.commit(n);
    if (state_ == State::Idle) begin_request();
    else watch();
}

// ------------------------------------------------------------------------------- answering

void Connection::on_worked(BodyOutcome outcome) {
    if (state_ == State::Closed) return;   // outcome.generation, if any, is cancelled as it goes
    if (outcome.reply) {
        send_reply(*outcome.reply);
        return;
    }
    generation_ = std::move(outcome.generation);
    if (generation_->streaming()) start_stream();
    on_events();
}

void Connection::on_events() {
    if (!generation_ || state_ == State::Closed) return;
    Generation::Progress p = generation_->advance();
    if (state_ == State::Streaming) {
        if (!p.events.empty()) send(chunk(p.events));
        if (p.finished) {
            stream_done_ = true;
            send("0\r\n\r\n");
        }
        if (static_cast<int64_t>(out_.size()) > limits_.max_stream_backlog_bytes) {
            generation_->cancel(/*client_gone=*/true);   // it does not read: as good as gone
            close("slow_reader");
        }
        return;
    }
    if (p.reply) send_reply(*p.reply);
}

void Connection::send_reply(const Reply& reply) {
    const bool draining = host_.context().draining;
    close_after_ = reply.close || !client_keep_alive_ || draining;
    state_ = State::Reply;
    std::string head = status_line(reply.status);
    head += "Content-Type: " + reply.content_type + "\r\n";
    head += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    for (const auto& [name, value] : reply.headers) head += name + ": " + value + "\r\n";
    if (close_after_) head += "Connection: close\r\n";
    send(head + "\r\n" + reply.body);
}

void Connection::start_stream() {
    state_ = State::Streaming;
    close_after_ = !client_keep_alive_ || host_.context().draining;
    std::string head = status_line(200) + "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n";
    for (const auto& [name, value] : stream_headers(host_.context().model)) head += name + ": " + value + "\r\n";
    if (close_after_) head += "Connection: close\r\n";
    send(head + "\r\n");
    arm_keep_alive_comment();
}

void Connection::arm_keep_alive_comment() {
    comment_timer_.expires_after(kKeepAliveComment);
    comment_timer_.async_wait([self = shared_from_this()](const error_code& ec) {
        if (ec || self->state_ != State::Streaming || self->stream_done_) return;
        if (!self->writing_ && self->out_.empty()) self->send(chunk(kSseKeepAlive));
        self->arm_keep_alive_comment();
    });
}

void Connection::send(std::string bytes) {
    out_ += bytes;
    flush();
}

void Connection::flush() {
    if (writing_ || out_.empty() || state_ == State::Closed) return;
    writing_ = true;
    writing_bytes_.swap(out_);
    out_.clear();
    arm(write_deadline_, limits_.write_timeout, "slow_reader");
    asio::async_write(socket_, asio::buffer(writing_bytes_),
                      [self = shared_from_this()](const error_code& ec, size_t) { self->on_written(ec); });
}

void Connection::on_written(const error_code& ec) {
    writing_ = false;
    write_deadline_.cancel();
    if (state_ == State::Closed) return;
    if (ec) {
        if (generation_) generation_->cancel(/*client_gone=*/!aborted(ec));
        close(nullptr);
        return;
    }
    writing_bytes_.clear();
    if (!out_.empty()) {
        flush();
        return;
    }
    if (state_ == State::Reply || (state_ == State::Streaming && stream_done_)) end_exchange();
}

// The answer is out: the request's slot and generation go; the connection waits for the next
// request, or closes (lingering when the body was never read).
void Connection::end_exchange() {
    comment_timer_.cancel();
    generation_.reset();
    slot_.release();
    stream_done_ = false;
    answered_ = true;
    if (close_after_ || host_.context().draining) {
        linger();
        return;
    }
    next_request();
}

// Shuts down the sending side and reads what the client still sends, for at most kLingerTime and
// kLingerBytes, so that closing with unread input does not reset the connection before the
// client read the answer.
void Connection::linger() {
    if (state_ != State::Lingering) {   // once: later reads must not extend the deadline
        state_ = State::Lingering;
        error_code ignored;
        socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        arm(deadline_, kLingerTime, nullptr);
    }
    if (reading_) return;   // the pending read's completion goes on here
    if (lingered_ >= kLingerBytes) {
        close(nullptr);
        return;
    }
    reading_ = true;
    socket_.async_read_some(asio::buffer(discard_), [self = shared_from_this()](const error_code& ec, size_t n) {
        self->reading_ = false;
        self->lingered_ += n;
        if (ec) self->close(nullptr);
        else self->linger();
    });
}

void Connection::release_reading() {
    if (reading_reserved_ > 0) host_.context().release_reading(reading_reserved_);
    reading_reserved_ = 0;
}

void Connection::close(const char* why) {
    if (state_ == State::Closed) return;
    state_ = State::Closed;
    release_reading();
    if (why) host_.context().metrics->on_connection_closed(why);
    generation_.reset();   // cancels a request still running
    slot_.release();
    error_code ignored;
    deadline_.cancel();
    write_deadline_.cancel();
    comment_timer_.cancel();
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    host_.on_closed(*this);
}

}  // namespace lorascope::serve
