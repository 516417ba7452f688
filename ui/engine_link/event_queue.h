// The hand-over point between engine threads and the GUI thread: sinks and the stats listener
// push under a mutex (never blocking on the GUI), the GUI takes everything at once on its timer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::ui {

struct QueuedToken { uint64_t ticket; TokenEvent event; };
struct QueuedFinish { uint64_t ticket; FinishEvent event; };
struct QueuedStats { uint64_t engine_generation; StepStats stats; };
struct QueuedRetry { uint64_t ticket; RetryEvent event; };

struct QueuedEvents {
    std::vector<QueuedToken> tokens;
    std::vector<QueuedFinish> finishes;
    std::vector<QueuedStats> steps;
    std::vector<QueuedRetry> retries;
    bool empty() const { return tokens.empty() && finishes.empty() && steps.empty() && retries.empty(); }
};

class EventQueue {
public:
    void push_token(uint64_t ticket, const TokenEvent& event);
    void push_finish(uint64_t ticket, const FinishEvent& event);
    void push_stats(uint64_t engine_generation, const StepStats& stats);
    void push_retry(uint64_t ticket, const RetryEvent& event);
    QueuedEvents take();

    // A fast engine on a tiny model can run thousands of steps between two GUI ticks; only the
    // newest ones are worth drawing, and the queue must not grow without bound meanwhile.
    static constexpr size_t kMaxQueuedSteps = 4096;

private:
    std::mutex mutex_;
    QueuedEvents pending_;
};

// One per request: forwards the engine thread's callbacks into the queue under the bridge's ticket.
class QueueSink : public RequestSink {
public:
    QueueSink(std::shared_ptr<EventQueue> queue, uint64_t ticket) : queue_(std::move(queue)), ticket_(ticket) {}
    void on_token(const TokenEvent& event) override { queue_->push_token(ticket_, event); }
    void on_finish(const FinishEvent& event) override { queue_->push_finish(ticket_, event); }
    void on_retry(const RetryEvent& event) override { queue_->push_retry(ticket_, event); }

private:
    std::shared_ptr<EventQueue> queue_;
    uint64_t ticket_;
};

}  // namespace lorascope::ui
