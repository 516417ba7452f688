#include "lab/lab_runner.h"

#include <algorithm>
#include <mutex>

#include "lorascope/workload_run.h"

namespace lorascope::ui {

// Filled on the engine's threads, emptied on the GUI thread's tick.
struct LabRunner::Queue {
    std::mutex mutex;
    LabEvents events;
    LabEvents take() {
        std::lock_guard<std::mutex> lock(mutex);
        LabEvents out;
        std::swap(out, events);
        return out;
    }
};

LabRunner::LabRunner(EngineFactory factory, QObject* parent) : QObject(parent), loader_(std::move(factory)) {
    tick_.setInterval(33);   // ~30 Hz, as the bridge drains
    connect(&tick_, &QTimer::timeout, this, &LabRunner::onTick);
}

LabRunner::~LabRunner() {
    tick_.stop();
    releaseEngine();
}

void LabRunner::start(std::vector<LabPolicy> policies, std::vector<Request> requests, std::vector<double> arrivals_s,
                      AdapterDirs adapters) {
    cancel();
    policies_ = std::move(policies);
    requests_ = std::move(requests);
    arrivals_s_ = std::move(arrivals_s);
    adapters_ = std::move(adapters);
    data_.assign(policies_.size(), LabRunData());
    for (auto& d : data_) d.reset(requests_, arrivals_s_);
    running_ = true;
    current_ = 0;
    Q_EMIT started();
    startPolicy(0);
}

void LabRunner::startPolicy(int index) {
    current_ = index;
    if (index >= int(policies_.size())) {
        running_ = false;
        tick_.stop();
        Q_EMIT finished();
        return;
    }
    Q_EMIT policyStarted(index);
    const uint64_t generation = ++generation_;
    auto wanted = [this, generation] { return generation == generation_ && running_; };
    loader_.load(policies_[size_t(index)].options, adapters_, wanted,
                 [this, index](std::shared_ptr<Engine> engine, const QString& error) {
                     if (engine) {
                         onEngineReady(std::move(engine));
                         return;
                     }
                     running_ = false;
                     Q_EMIT failed(tr("Policy %1: %2").arg(policies_[size_t(index)].name, error));
                     Q_EMIT finished();
                 });
}

void LabRunner::onEngineReady(std::shared_ptr<Engine> engine) {
    engine_ = std::move(engine);
    queue_ = std::make_shared<Queue>();
    std::weak_ptr<Queue> weak = queue_;
    auto push = [weak](auto add) {
        if (auto q = weak.lock()) {
            std::lock_guard<std::mutex> lock(q->mutex);
            add(q->events);
        }
    };
    RunObserver observer;
    observer.on_submit = [push](size_t i, RequestId id) { push([&](LabEvents& e) { e.submits.emplace_back(i, id); }); };
    observer.on_step = [push](const StepStats& s) { push([&](LabEvents& e) { e.steps.push_back(s); }); };
    observer.on_token = [push](const TokenEvent& t) { push([&](LabEvents& e) { e.tokens.push_back(t.id); }); };
    observer.on_finish = [push](const FinishEvent& f) {
        FinishEvent slim = f;   // the lab shows figures, not texts
        slim.text.clear();
        slim.token_ids.clear();
        slim.logprobs.clear();
        push([&](LabEvents& e) { e.finishes.push_back(std::move(slim)); });
    };
    run_ = std::make_unique<WorkloadRun>(*engine_, requests_, arrivals_s_, std::move(observer));
    run_->set_min_step_ms(min_step_ms_);
    run_->set_paused(paused_);
    run_->start();
    tick_.start();
}

void LabRunner::onTick() {
    if (!run_ || !queue_) return;
    // Read before taking the events: a run that is done has queued all of them by then.
    const bool done = run_->done();
    LabEvents events = queue_->take();
    const int index = current_;
    if (!events.empty()) {
        data_[size_t(index)].apply(events);
        Q_EMIT updated(index);
    }
    if (done) finishPolicy();
}

void LabRunner::drainNow() { onTick(); }

std::optional<BenchFigures> LabRunner::figures(int i) const {
    if (i < 0 || i >= int(data_.size())) return std::nullopt;
    if (data_[size_t(i)].hasFigures()) return data_[size_t(i)].figures();
    if (i == current_ && run_) return run_->figures(goodput_);
    return std::nullopt;
}

void LabRunner::finishPolicy() {
    const int index = current_;
    LabRunData& d = data_[size_t(index)];
    d.setFigures(run_->figures(goodput_), run_->recorder().ttft_ms(), run_->recorder().per_token_ms(), run_->recorder().timings());
    releaseEngine();
    Q_EMIT updated(index);
    Q_EMIT policyFinished(index);
    startPolicy(index + 1);
}

void LabRunner::releaseEngine() {
    run_.reset();   // cancels and detaches before the engine goes
    queue_.reset();
    loader_.release(std::move(engine_));
    engine_.reset();
}

void LabRunner::cancel() {
    ++generation_;
    const bool was_running = running_;
    running_ = false;
    tick_.stop();
    if (run_) {
        run_->cancel();
        // What the engine reported so far stays on the charts.
        if (queue_ && current_ >= 0 && current_ < int(data_.size())) data_[size_t(current_)].apply(queue_->take());
    }
    releaseEngine();
    if (was_running) {
        for (int i = std::max(0, current_); i < int(data_.size()); ++i) data_[size_t(i)].cancelUnfinished();
        if (current_ >= 0 && current_ < int(data_.size())) Q_EMIT updated(current_);
        Q_EMIT finished();
    }
}

void LabRunner::setMinStepMs(int ms) {
    min_step_ms_ = qBound(0, ms, 1000);
    if (run_) run_->set_min_step_ms(min_step_ms_);
}

void LabRunner::setGoodputTargets(const LatencyTargets& targets) {
    goodput_ = targets;
    for (int i = 0; i < int(data_.size()); ++i) {
        if (!data_[size_t(i)].hasFigures()) continue;
        data_[size_t(i)].recountGoodput(goodput_);
        Q_EMIT updated(i);
    }
}

void LabRunner::setPaused(bool paused) {
    paused_ = paused;
    if (run_) run_->set_paused(paused);
}

void LabRunner::stepOnce() {
    if (run_) run_->step_once();
}

}  // namespace lorascope::ui
