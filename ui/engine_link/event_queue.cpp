#include "engine_link/event_queue.h"

namespace lorascope::ui {

void EventQueue::push_token(uint64_t ticket, const TokenEvent& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.tokens.push_back({ticket, event});
}

void EventQueue::push_finish(uint64_t ticket, const FinishEvent& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.finishes.push_back({ticket, event});
}

void EventQueue::push_stats(uint64_t engine_generation, const StepStats& stats) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& steps = pending_.steps;
    if (steps.size() >= kMaxQueuedSteps) steps.erase(steps.begin(), steps.begin() + steps.size() / 2);
    steps.push_back({engine_generation, stats});
}

void EventQueue::push_retry(uint64_t ticket, const RetryEvent& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.retries.push_back({ticket, event});
}

QueuedEvents EventQueue::take() {
    QueuedEvents out;
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(out, pending_);
    return out;
}

}  // namespace lorascope::ui
