#include "lorascope/workload_run.h"

#include <algorithm>
#include <chrono>

namespace lorascope {

namespace {
using Clock = std::chrono::steady_clock;
// A released step that was not published (nothing to run after all) is given up on after this
// long plus twice the last step's time, and the next one is released.
constexpr double kReleaseTimeoutMs = 1000;
}  // namespace

// Shared with the sink and the stats listener, which the engine may call after the run is gone.
struct WorkloadRun::State {
    std::vector<Request> requests;
    std::vector<double> arrivals_s;
    RunObserver observer;
    BenchRecorder recorder;

    mutable std::mutex mutex;
    std::condition_variable changed;
    std::vector<RequestId> ids;
    size_t submitted = 0;
    size_t finished = 0;
    int64_t steps_seen = 0;
    double last_step_ms = 0;
    bool stop = false;
    bool cancelled = false;
    bool drained = false;   // every request finished and the engine went idle: every step published
    bool paused = false;
    double min_step_ms = 0;
    int64_t pending_single_steps = 0;
};

namespace {

class RunSink : public RequestSink {
public:
    explicit RunSink(std::shared_ptr<WorkloadRun::State> state) : state_(std::move(state)) {}
    void on_token(const TokenEvent& e) override {
        state_->recorder.token(e.id);
        if (state_->observer.on_token) state_->observer.on_token(e);
    }
    void on_finish(const FinishEvent& e) override {
        state_->recorder.finished(e);
        if (state_->observer.on_finish) state_->observer.on_finish(e);
        std::lock_guard<std::mutex> lock(state_->mutex);
        ++state_->finished;
        state_->changed.notify_all();
    }

private:
    std::shared_ptr<WorkloadRun::State> state_;
};

}  // namespace

WorkloadRun::WorkloadRun(Engine& engine, std::vector<Request> requests, std::vector<double> arrivals_s, RunObserver observer)
    : engine_(engine), state_(std::make_shared<State>()) {
    arrivals_s.resize(requests.size(), arrivals_s.empty() ? 0.0 : arrivals_s.back());
    state_->requests = std::move(requests);
    state_->arrivals_s = std::move(arrivals_s);
    state_->observer = std::move(observer);
    state_->ids.assign(state_->requests.size(), 0);
}

WorkloadRun::~WorkloadRun() {
    cancel();
    if (driver_.joinable()) driver_.join();
    engine_.set_stats_listener(nullptr);
    engine_.set_paused(false);
}

void WorkloadRun::start() {
    std::weak_ptr<State> weak = state_;
    engine_.set_stats_listener([weak](const StepStats& s) {
        auto state = weak.lock();
        if (!state) return;
        state->recorder.step(s);
        if (state->observer.on_step) state->observer.on_step(s);
        std::lock_guard<std::mutex> lock(state->mutex);
        ++state->steps_seen;
        state->last_step_ms = s.wall_ms;
        state->changed.notify_all();
    });
    state_->recorder.restart_clock();
    driver_ = std::thread([this] { drive(); });
}

// Submits at the arrival times and, while paced or paused, lets steps through one at a time.
void WorkloadRun::drive() {
    State& s = *state_;
    auto sink = std::make_shared<RunSink>(state_);
    const auto start = Clock::now();
    auto submit = [&](size_t i) {
        const double at = s.recorder.now_ms();
        const RequestId id = engine_.submit(s.requests[i], sink);
        s.recorder.submitted(id, at);
        if (s.observer.on_submit) s.observer.on_submit(i, id);
        std::lock_guard<std::mutex> lock(s.mutex);
        s.ids[i] = id;
        ++s.submitted;
    };
    // Everything due at once joins the same first step.
    engine_.set_paused(true);
    size_t next = 0;
    auto stopping = [&] {
        std::lock_guard<std::mutex> lock(s.mutex);
        return s.stop;
    };
    while (next < s.requests.size() && s.arrivals_s[next] <= 0.0 && !stopping()) submit(next++);
    apply_engine_pause();

    int64_t released_at_step = -1;      // steps_seen when the last paced step was let through
    Clock::time_point released = start;
    std::unique_lock<std::mutex> lock(s.mutex);
    while (!s.stop && !(s.submitted == s.requests.size() && s.finished == s.requests.size())) {
        const auto now = Clock::now();
        auto wake = now + std::chrono::milliseconds(200);
        if (next < s.requests.size()) {
            const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.arrivals_s[next]));
            if (due <= now) {
                lock.unlock();
                submit(next++);
                lock.lock();
                continue;
            }
            wake = std::min(wake, due);
        }
        const bool has_work = s.finished < s.submitted;
        if (has_work && s.pending_single_steps > 0) {
            --s.pending_single_steps;
            lock.unlock();
            engine_.step_once();
            lock.lock();
        } else if (has_work && !s.paused && s.min_step_ms > 0) {
            const bool seen = released_at_step < 0 || s.steps_seen > released_at_step;
            const double since = std::chrono::duration<double, std::milli>(now - released).count();
            const bool given_up = since > kReleaseTimeoutMs + 2 * s.last_step_ms;
            if ((seen && since >= s.min_step_ms) || given_up) {
                released_at_step = s.steps_seen;
                released = now;
                lock.unlock();
                engine_.step_once();
                lock.lock();
                continue;
            }
            if (seen) wake = std::min(wake, released + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double, std::milli>(s.min_step_ms)));
        }
        s.changed.wait_until(lock, wake);
    }
    if (s.stop) return;
    lock.unlock();
    // A request's last token is not always its last step: the engine may publish one more step
    // before the row leaves. Let it run, unpaced, so that the step stream is complete (and the
    // same every time) when the run reports done.
    engine_.set_paused(false);
    engine_.wait_idle();
    lock.lock();
    s.drained = true;
    s.changed.notify_all();
}

void WorkloadRun::apply_engine_pause() {
    bool hold;
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        hold = state_->paused || state_->min_step_ms > 0;
    }
    engine_.set_paused(hold);
}

void WorkloadRun::wait() {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->changed.wait(lock, [&] { return state_->stop || state_->drained; });
}

bool WorkloadRun::wait_for_ms(int64_t ms) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    return state_->changed.wait_for(lock, std::chrono::milliseconds(ms), [&] { return state_->drained; });
}

bool WorkloadRun::done() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->drained || state_->cancelled;
}

void WorkloadRun::cancel() {
    std::vector<RequestId> ids;
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        if (state_->stop) return;
        state_->cancelled = true;
        state_->stop = true;
        ids = state_->ids;
        state_->changed.notify_all();
    }
    if (driver_.joinable()) driver_.join();
    for (RequestId id : ids)
        if (id != 0) engine_.cancel(id);
    engine_.set_paused(false);   // cancellations of running rows need no step, but queued ones are taken at a wake-up
}

void WorkloadRun::set_min_step_ms(double ms) {
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->min_step_ms = std::max(0.0, ms);
        state_->changed.notify_all();
    }
    if (driver_.joinable()) apply_engine_pause();
}

void WorkloadRun::set_paused(bool paused) {
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->paused = paused;
        state_->pending_single_steps = 0;
        state_->changed.notify_all();
    }
    if (driver_.joinable()) apply_engine_pause();
}

bool WorkloadRun::paused() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->paused;
}

void WorkloadRun::step_once() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->pending_single_steps;
    state_->changed.notify_all();
}

size_t WorkloadRun::size() const { return state_->requests.size(); }

const BenchRecorder& WorkloadRun::recorder() const { return state_->recorder; }

std::vector<RequestId> WorkloadRun::ids() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->ids;
}

}  // namespace lorascope
