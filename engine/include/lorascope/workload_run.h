// Puts a workload's requests through an engine at their arrival times and records the run
// (BenchRecorder): `lorascope-cli bench` waits for it, the window's batching lab watches it.
// Requests that arrive at time 0 are all submitted while the engine is held, so that a workload
// that arrives all at once starts with the same batch every time (the step stream is then a
// function of the workload, the model and the policy alone). Torch-free: it drives any Engine.
//
// Pace: real time, or at most one step per `min_step_ms` (the engine is held and this run lets
// one step through at a time), so that a tiny model's run can be watched; pause and single steps
// work in either.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "lorascope/bench_report.h"
#include "lorascope/engine.h"

namespace lorascope {

// Called on the engine's threads (or the run's own): quick, never blocking.
struct RunObserver {
    std::function<void(size_t index, RequestId id)> on_submit;
    std::function<void(const StepStats&)> on_step;
    std::function<void(const TokenEvent&)> on_token;
    std::function<void(const FinishEvent&)> on_finish;
};

class WorkloadRun {
public:
    // `engine` must outlive the run and serve nothing else meanwhile: the run owns its stats
    // listener and its pause state. `arrivals_s[i]` is when requests[i] is submitted.
    WorkloadRun(Engine& engine, std::vector<Request> requests, std::vector<double> arrivals_s, RunObserver observer = {});
    ~WorkloadRun();   // cancels what is left and detaches from the engine
    WorkloadRun(const WorkloadRun&) = delete;
    WorkloadRun& operator=(const WorkloadRun&) = delete;

    void start();
    // Done: every request has finished and the engine has gone idle, so that every step it ran
    // for them has been published (the engine may step once more after a request's last token).
    void wait();
    bool wait_for_ms(int64_t ms);   // true when done
    bool done() const;              // done, or cancelled
    void cancel();                  // cancels every request (submitted or not) and ends the run

    void set_min_step_ms(double ms);   // 0: real time
    void set_paused(bool paused);
    bool paused() const;
    void step_once();                  // one step while paused

    size_t size() const;
    const BenchRecorder& recorder() const;
    BenchFigures figures(const LatencyTargets& goodput_targets = {}) const { return recorder().figures(goodput_targets); }
    std::vector<RequestId> ids() const;   // by request index; 0 until submitted

    struct State;   // shared with the engine's callbacks, which may outlive the run

private:
    void drive();
    void apply_engine_pause();
    Engine& engine_;
    std::shared_ptr<State> state_;
    std::thread driver_;
};

}  // namespace lorascope
