// What other threads hand the engine thread: submissions, cancellations, pause and single steps,
// and the stop request; and the idle state callers wait for. The only engine state shared across
// threads, all of it under one mutex.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/live_request.h"

namespace lorascope::engine_detail {

struct Submission {
    std::unique_ptr<LiveRequest> request;
    std::string error;   // preparation failed on the submitting thread: finish with this error
};

// One wake-up's worth of work for the engine thread.
struct Inbox {
    std::vector<Submission> submissions;
    std::set<RequestId> cancels;
    // cancel_all(): every request with an id below this one (those submitted before the call).
    RequestId cancel_below = 0;
    bool run_step = false;
    bool stop = false;
};

class Mailbox {
public:
    // Ids are handed out before a request is prepared, so that its errors can name it.
    RequestId reserve_id();
    void post(Submission submission);
    void cancel(RequestId id);
    void cancel_all();
    void set_paused(bool paused);
    void step_once();
    void stop();

    // Blocks until there is something to do. `has_work`: the engine thread holds queued or running
    // requests. Submissions and cancellations are always handed over, even while paused, so that a
    // cancellation that arrives with (or after) its submission finds the request.
    Inbox wait(bool has_work);
    // What is left at stop (submissions not yet taken).
    std::vector<Submission> drain();

    void set_idle(bool idle);
    void wait_idle();

private:
    std::mutex mutex_;
    std::condition_variable wake_, idle_changed_;
    std::vector<Submission> incoming_;
    std::set<RequestId> cancels_;
    RequestId next_id_ = 1;
    RequestId cancel_below_ = 0;
    bool stop_ = false;
    bool paused_ = false;
    int64_t step_budget_ = 0;
    bool idle_ = true;
};

}  // namespace lorascope::engine_detail
