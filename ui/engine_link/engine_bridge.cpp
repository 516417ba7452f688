#include "engine_link/engine_bridge.h"

#include <QMetaObject>
#include <atomic>
#include <exception>

#include "engine_link/event_queue.h"
#include "engine_link/request_limits.h"
#include "lorascope/error.h"

namespace lorascope::ui {

struct EngineBridge::LoadJob {
    EngineOptions options;
    std::atomic<bool> cancelled{false};
    std::atomic<int64_t> tensors_read{0}, tensors_total{0};   // written by the loading thread
    int64_t reported = -1;                                     // GUI thread: last value signalled
};

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

EngineBridge::EngineBridge(EngineFactory factory, QObject* parent)
    : QObject(parent), queue_(std::make_shared<EventQueue>()), loader_(std::move(factory)) {
    qRegisterMetaType<DrainBatch>();
    qRegisterMetaType<SubmittedRequest>();
    qRegisterMetaType<AdapterInfo>();
    drain_timer_.setInterval(33);   // ~30 Hz: smooth streaming without flooding the views
    drain_timer_.setTimerType(Qt::PreciseTimer);
    connect(&drain_timer_, &QTimer::timeout, this, &EngineBridge::onDrainTimer);
    drain_timer_.start();
}

EngineBridge::~EngineBridge() {
    drain_timer_.stop();
    if (loading_) loading_->cancelled = true;
    // The worker may be inside unload_adapter(), which waits for the requests that pin the
    // adapter; while the engine is paused they never end: release cancels and unpauses first.
    // The loader (a member, destroyed after this body) then finishes its running job and destroys
    // the engine on its worker.
    releaseEngine();
}

const ModelConfig* EngineBridge::modelConfig() const { return engine_ ? &engine_->model_config() : nullptr; }
const GenerationConfig* EngineBridge::generationConfig() const {
    return engine_ ? &engine_->generation_config() : nullptr;
}
std::vector<AdapterInfo> EngineBridge::adapters() const {
    return engine_ ? engine_->adapters() : std::vector<AdapterInfo>{};
}

void EngineBridge::loadModel(const EngineOptions& options) {
    if (loading_) loading_->cancelled = true;
    auto job = std::make_shared<LoadJob>();
    job->options = options;
    // Progress for the panel, and Cancel stops the load at the next tensor. A weak pointer: the
    // engine keeps its options, which must not keep the job alive.
    std::weak_ptr<LoadJob> weak_job = job;
    job->options.load_progress = [weak_job](int64_t read, int64_t total) {
        auto j = weak_job.lock();
        if (!j) return false;
        j->tensors_read = read;
        j->tensors_total = total;
        return !j->cancelled.load();
    };
    loading_ = job;
    const QString dir = qs(options.model_dir);
    Q_EMIT loadStarted(dir);
    auto wanted = [this, job] { return !job->cancelled && loading_ == job; };
    loader_.load(job->options, {}, wanted, [this, job, dir](std::shared_ptr<Engine> engine, const QString& error) {
        loading_.reset();
        if (!engine) {
            Q_EMIT loadFailed(dir, error);
            return;
        }
        adoptEngine(std::move(engine), job->options);
        Q_EMIT loadFinished(dir);
    });
}

void EngineBridge::cancelLoad() {
    if (!loading_) return;
    loading_->cancelled = true;
    const QString dir = qs(loading_->options.model_dir);
    loading_.reset();
    Q_EMIT loadCancelled(dir);
}

void EngineBridge::adoptEngine(std::shared_ptr<Engine> engine, const EngineOptions& options) {
    releaseEngine();
    engine_ = std::move(engine);
    engine_options_ = options;
    engine_options_.load_progress = nullptr;   // the load's own; engines built from these options (the lab's) report none
    model_dir_ = qs(options.model_dir);
    const uint64_t generation = ++engine_generation_;
    std::weak_ptr<EventQueue> queue = queue_;
    engine_->set_stats_listener([queue, generation](const StepStats& stats) {
        if (auto q = queue.lock()) q->push_stats(generation, stats);
    });
    if (paused_) {
        paused_ = false;
        Q_EMIT pausedChanged(false);
    }
}

void EngineBridge::releaseEngine() {
    if (!engine_) return;
    engine_ids_.clear();
    tickets_.clear();
    // Cancelled finishes still reach the queue through the sinks and mark the rows.
    loader_.release(std::move(engine_));
    engine_.reset();
    model_dir_.clear();
}

Ticket EngineBridge::submit(Request request, int compare_group) {
    if (!engine_) {
        Q_EMIT errorOccurred(tr("No model loaded"), tr("Load a model before submitting prompts."));
        return 0;
    }
    const Ticket ticket = next_ticket_++;
    if (request.client_id.empty()) request.client_id = std::to_string(ticket);
    SubmittedRequest info;
    info.ticket = ticket;
    info.client_id = qs(request.client_id);
    info.prompt = request.prompt ? qs(*request.prompt) : QString();
    info.adapter = request.merge ? qs(merge_name(*request.merge)) : qs(request.adapter);
    info.merge = request.merge;
    info.compare_group = compare_group;
    info.params = request.params;
    info.input_ids = request.input_ids;
    // The row exists before any event can be drained: drains happen on this thread too.
    adapter_of_[ticket] = info.adapter;
    active_[ticket] = true;
    Q_EMIT requestSubmitted(info);
    auto sink = std::make_shared<QueueSink>(queue_, ticket);
    const QString refused = positionRefusal(request.params, engine_->model_config(), engine_->generation_config());
    if (!refused.isEmpty()) {   // at submit time, as this row's error: never after the work
        FinishEvent failed;
        failed.reason = FinishReason::Error;
        failed.error = refused.toStdString();
        sink->on_finish(failed);
        return ticket;
    }
    try {
        const RequestId id = engine_->submit(std::move(request), sink);
        engine_ids_[ticket] = id;
        tickets_[id] = ticket;
    } catch (const std::exception& e) {
        // The contract says invalid requests finish through the sink; keep one row honest anyway.
        FinishEvent failed;
        failed.reason = FinishReason::Error;
        failed.error = e.what();
        sink->on_finish(failed);
    }
    return ticket;
}

void EngineBridge::holdSubmissions(bool hold) {
    if (engine_ && !paused_) engine_->set_paused(hold);
}

void EngineBridge::cancel(Ticket ticket) {
    auto it = engine_ids_.find(ticket);
    if (engine_ && it != engine_ids_.end()) engine_->cancel(it->second);
}

void EngineBridge::cancelAll() {
    if (engine_) engine_->cancel_all();
}

bool EngineBridge::isActive(Ticket ticket) const {
    auto it = active_.find(ticket);
    return it != active_.end() && it->second;
}

void EngineBridge::loadAdapter(const QString& name, const QString& dir) {
    if (!engine_) {
        Q_EMIT adapterFailed(name, dir, tr("Load a model before adding adapters."));
        return;
    }
    loader_.post([this, engine = engine_, name, dir] {
        AdapterInfo info;
        QString error;
        try {
            info = engine->load_adapter(name.toStdString(), dir.toStdString());
        } catch (const std::exception& e) {
            error = qs(e.what());
        }
        QMetaObject::invokeMethod(this, [this, info, error, name, dir] {
            if (error.isEmpty()) Q_EMIT adapterLoaded(info);
            else Q_EMIT adapterFailed(name, dir, error);
        }, Qt::QueuedConnection);
    });
}

void EngineBridge::unloadAdapter(const QString& name) {
    if (!engine_) return;
    loader_.post([this, engine = engine_, name] {
        QString error;
        try {
            engine->unload_adapter(name.toStdString());
        } catch (const std::exception& e) {
            error = qs(e.what());
        }
        QMetaObject::invokeMethod(this, [this, name, error] {
            if (error.isEmpty()) Q_EMIT adapterUnloaded(name);
            else Q_EMIT errorOccurred(tr("Could not remove adapter"), error);
        }, Qt::QueuedConnection);
    });
}

void EngineBridge::setPaused(bool paused) {
    if (paused == paused_) return;
    paused_ = paused;
    if (engine_) engine_->set_paused(paused);
    Q_EMIT pausedChanged(paused);
}

void EngineBridge::stepOnce() {
    if (engine_) engine_->step_once();
}

void EngineBridge::setDrainIntervalMs(int ms) { drain_timer_.setInterval(qBound(16, ms, 1000)); }

void EngineBridge::drainNow() { onDrainTimer(); }

void EngineBridge::onDrainTimer() {
    if (loading_ && loading_->tensors_read != loading_->reported) {
        loading_->reported = loading_->tensors_read;
        Q_EMIT loadProgress(loading_->reported, loading_->tensors_total);
    }
    QueuedEvents events = queue_->take();
    if (events.empty()) return;
    // Tickets that finished one drain ago: the statistics of their last step have arrived by now
    // (a step publishes them after its finishes), so their entries go and the maps stay bounded.
    for (Ticket t : retiring_) {
        auto id = engine_ids_.find(t);
        if (id != engine_ids_.end()) {
            tickets_.erase(id->second);
            engine_ids_.erase(id);
        }
        adapter_of_.erase(t);
        active_.erase(t);
    }
    retiring_.clear();
    DrainBatch batch;
    for (auto& r : events.retries) batch.retries.push_back({r.ticket, r.event.attempt, qs(r.event.reason)});
    batch.tokens.reserve(events.tokens.size());
    for (auto& t : events.tokens) {
        TokenDelta d;
        d.ticket = t.ticket;
        d.token = {t.event.token_id, qs(t.event.text_delta), t.event.logprob, t.event.special,
                   std::move(t.event.alternatives)};
        batch.tokens.push_back(std::move(d));
    }
    for (auto& f : events.finishes) {
        active_[f.ticket] = false;
        retiring_.push_back(f.ticket);
        batch.finishes.push_back({f.ticket, std::move(f.event)});
    }
    for (auto& s : events.steps) {
        if (s.engine_generation != engine_generation_) continue;   // from a replaced engine
        StepSample sample;
        sample.row_tickets.reserve(s.stats.row_requests.size());
        for (RequestId id : s.stats.row_requests) {
            auto it = tickets_.find(id);
            const Ticket t = it == tickets_.end() ? 0 : it->second;
            sample.row_tickets.push_back(t);
            auto a = adapter_of_.find(t);
            sample.row_adapters.push_back(a == adapter_of_.end() ? QString() : a->second);
        }
        sample.stats = std::move(s.stats);
        batch.steps.push_back(std::move(sample));
    }
    Q_EMIT drained(batch);
}

}  // namespace lorascope::ui
