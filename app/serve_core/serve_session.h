// One generation request of `lorascope-cli serve` from submit to its last byte, apart from HTTP:
// the engine's events handed from the engine thread to whoever serves the request (EventQueue),
// and what they become (Generation: a whole reply, or a stream's events). The server's
// connection calls Generation on its own thread when the queue says events wait; nothing here
// blocks, so that one thread can serve every connection.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/engine.h"
#include "serve_context.h"
#include "serve_responses.h"

namespace lorascope::serve {

struct SinkEvent {
    bool finished = false;
    TokenEvent token;
    FinishEvent finish;
};

// The engine's events for one request, from the engine thread. `notify` runs (on the engine
// thread, or inside submit) when an event arrives and none was waiting: it must only post work
// elsewhere. The queue also does the request's metrics when it finishes, so that a request whose
// client went away is still counted.
class EventQueue final : public RequestSink {
public:
    EventQueue(std::shared_ptr<Metrics> metrics, Clock::time_point received, std::function<void()> notify);

    void on_token(const TokenEvent& event) override;
    void on_finish(const FinishEvent& event) override;

    void set_validation_seconds(double seconds);   // before submit: what the request spent before the engine
    // Every event waiting; the next event notifies again.
    std::vector<SinkEvent> take();
    // Waits until an event waits or `timeout` passes (tests, and callers that may block).
    bool wait(std::chrono::milliseconds timeout);

private:
    void push(SinkEvent event);

    std::shared_ptr<Metrics> metrics_;
    Clock::time_point received_;
    std::function<void()> notify_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<SinkEvent> events_;
    bool notified_ = false;
    double validation_s_ = 0;
};

enum class Dialect { Lorax, OpenAI };

// One submitted request. Destroying it before its finish cancels it in the engine.
class Generation {
public:
    // `request` has been parsed and fitted to the budget (fit_to_budget).
    Generation(ServeContext& context, ParsedRequest request, Dialect dialect, bool wrap_in_list,
               Clock::time_point received);
    ~Generation();
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;

    // Submits to the engine; `notify` as for EventQueue.
    void start(std::function<void()> notify);
    // Cancels it in the engine (idempotent); `client_gone` counts it as a disconnect.
    void cancel(bool client_gone);

    bool streaming() const { return request_.stream; }

    struct Progress {
        std::string events;           // streams: SSE text to send now (may be empty)
        std::optional<Reply> reply;   // whole requests: the answer, once finished
        bool finished = false;        // the engine's finish has been taken
    };
    // Takes the events waiting. A stream's first call also returns what goes before any token.
    Progress advance();
    // Blocks until the request finishes and returns its whole answer or all its events (tests;
    // the fuzz target's engine answers inside submit).
    Progress run_to_end(std::chrono::milliseconds timeout);

    RequestId id() const { return id_; }

private:
    ServeContext& context_;
    ParsedRequest request_;
    Dialect dialect_;
    bool wrap_in_list_;
    Clock::time_point received_;
    std::string completion_id_;
    int64_t created_;
    StreamWriter writer_;
    OpenRequest open_;
    std::shared_ptr<EventQueue> queue_;
    RequestId id_ = 0;
    bool submitted_ = false, began_ = false, finished_ = false, cancelled_ = false;
    std::vector<TokenEvent> tokens_;   // whole requests
};

}  // namespace lorascope::serve
