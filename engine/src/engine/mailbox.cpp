#include "engine/mailbox.h"

#include <algorithm>

namespace lorascope::engine_detail {

RequestId Mailbox::reserve_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    return next_id_++;
}

void Mailbox::post(Submission submission) {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.push_back(std::move(submission));
    idle_ = false;
    wake_.notify_all();
}

void Mailbox::cancel(RequestId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    cancels_.insert(id);
    wake_.notify_all();
}

void Mailbox::cancel_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    // A watermark, not a flag: a request submitted after this call returns has a higher id and is
    // left alone, even when the engine thread takes both in the same wake-up.
    cancel_below_ = std::max(cancel_below_, next_id_);
    wake_.notify_all();
}

void Mailbox::set_paused(bool paused) {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = paused;
    step_budget_ = 0;
    wake_.notify_all();
}

void Mailbox::step_once() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++step_budget_;
    wake_.notify_all();
}

void Mailbox::stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    wake_.notify_all();
}

Inbox Mailbox::wait(bool has_work) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] {
        const bool work = has_work || !incoming_.empty();
        return stop_ || !cancels_.empty() || cancel_below_ > 0 || !incoming_.empty() ||
               (work && (!paused_ || step_budget_ > 0));
    });
    Inbox inbox;
    inbox.stop = stop_;
    if (stop_) return inbox;
    inbox.cancels.swap(cancels_);
    inbox.cancel_below = std::exchange(cancel_below_, 0);
    inbox.submissions.swap(incoming_);
    if ((has_work || !inbox.submissions.empty()) && (!paused_ || step_budget_ > 0)) {
        if (paused_) --step_budget_;
        inbox.run_step = true;
    }
    return inbox;
}

std::vector<Submission> Mailbox::drain() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Submission> out;
    out.swap(incoming_);
    return out;
}

void Mailbox::set_idle(bool idle) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_ = idle && incoming_.empty();
    if (idle_) idle_changed_.notify_all();
}

void Mailbox::wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_changed_.wait(lock, [this] { return idle_; });
}

}  // namespace lorascope::engine_detail
