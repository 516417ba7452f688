#include "engine/emitter.h"

#include "engine/fault_injection.h"

namespace lorascope::engine_detail {

namespace {

template <typename Call>
bool guarded(Call&& call, std::string& why) noexcept {
    try {
        call();
        return true;
    } catch (const std::exception& e) {
        why = e.what();
    } catch (...) {
        why = "an exception that is not a std::exception";
    }
    return false;
}

}  // namespace

bool emit_token(RequestSink& sink, const TokenEvent& event, std::string& why) noexcept {
    return guarded(
        [&] {
            fault_point(FaultPoint::OnToken, {event.id});
            sink.on_token(event);
        },
        why);
}

void emit_finish(RequestSink& sink, const FinishEvent& event) noexcept {
    std::string ignored;
    guarded(
        [&] {
            fault_point(FaultPoint::OnFinish, {event.id});
            sink.on_finish(event);
        },
        ignored);
}

void StatsPublisher::set(std::function<void(const StepStats&)> listener) {
    std::function<void(const StepStats&)> old;
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    old.swap(listener_);
    listener_ = std::move(listener);
    // `old` is destroyed after the lock is released only if it is not the one running (a
    // listener that replaces itself keeps running from the copy publish() holds).
}

void StatsPublisher::publish(const StepStats& stats) noexcept {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (!listener_) return;
    const auto listener = listener_;  // a copy: the listener may replace itself
    std::string why;
    if (!guarded(
            [&] {
                fault_point(FaultPoint::StatsListener, {});
                listener(stats);
            },
            why))
        ++failures_;
}

int64_t StatsPublisher::failures() const {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return failures_;
}

}  // namespace lorascope::engine_detail
