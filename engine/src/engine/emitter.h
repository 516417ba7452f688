// Every call from the engine thread into user code (sinks, the stats listener) goes through here,
// guarded: whatever it throws, std::bad_alloc included, stays here and the engine goes on.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "lorascope/engine.h"

namespace lorascope::engine_detail {

// False when the sink threw; `why` then says what (the request is failed with it).
bool emit_token(RequestSink& sink, const TokenEvent& event, std::string& why) noexcept;
// A sink that throws from on_finish has had its one event: the exception is dropped.
void emit_finish(RequestSink& sink, const FinishEvent& event) noexcept;

// The stats listener. set() waits for a call in flight on another thread, so that the caller may
// destroy what its old listener used as soon as set() returns. A listener may replace itself.
class StatsPublisher {
public:
    void set(std::function<void(const StepStats&)> listener);
    void publish(const StepStats& stats) noexcept;
    int64_t failures() const;

private:
    mutable std::recursive_mutex mutex_;   // held while the listener runs
    std::function<void(const StepStats&)> listener_;
    int64_t failures_ = 0;
};

}  // namespace lorascope::engine_detail
