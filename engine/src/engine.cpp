// The background engine: one thread that owns the model, the running batch and the waiting queue.
//
// Each loop iteration is one engine step:
//   1. take what other threads handed over (submissions, cancellations) under the lock;
//   2. decode one token for every running row;
//   3. admit waiting requests that fit, prefill them as a new batch (which yields their first
//      token) and concatenate that batch into the running one;
//   4. drop finished rows (DecodeState::filter) and publish StepStats.
// Sinks are called from this thread only, so a request's events arrive in order.
#include "lorascope/engine.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "engine_request.h"
#include "lorascope/error.h"
#include "lorascope/runtime.h"
#include "lorascope/tokenizer.h"
#include "models/model.h"
#include "scheduler/admission.h"

namespace lorascope {

const char* to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::Eos: return "eos";
        case FinishReason::Length: return "length";
        case FinishReason::Stop: return "stop";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::Error: return "error";
    }
    return "error";
}

namespace {

using engine_detail::LiveRequest;
using engine_detail::Clock;

struct Submission {
    RequestId id = 0;
    Request request;
    std::shared_ptr<RequestSink> sink;
    Clock::time_point submitted;
};

at::ScalarType parse_dtype(const std::string& name) {
    if (name == "float32" || name == "fp32") return at::kFloat;
    if (name == "float16" || name == "fp16") return at::kHalf;
    if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
    throw Error(ErrorKind::InvalidArgument, "unknown dtype '" + name + "' (float32, float16 or bfloat16)");
}

at::Device parse_device(const std::string& name) {
    if (name == "cpu") return at::kCPU;
    if (name.rfind("cuda", 0) == 0) {
        if (!at::hasCUDA())
            throw Error(ErrorKind::Unsupported,
                        "device '" + name + "' requested but this LibTorch has no usable CUDA device");
        return at::Device(name);
    }
    throw Error(ErrorKind::InvalidArgument, "unknown device '" + name + "' (cpu or cuda[:N])");
}

class EngineImpl final : public Engine {
public:
    EngineImpl(const EngineOptions& options, std::unique_ptr<models::Model> model,
               std::unique_ptr<Tokenizer> tokenizer)
        : options_(options), model_(std::move(model)), tokenizer_(std::move(tokenizer)) {
        thread_ = std::thread([this] { run(); });
    }

    ~EngineImpl() override {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const RequestId id = next_id_++;
        incoming_.push_back({id, std::move(request), std::move(sink), Clock::now()});
        idle_ = false;
        wake_.notify_all();
        return id;
    }

    void cancel(RequestId id) override {
        std::lock_guard<std::mutex> lock(mutex_);
        cancels_.insert(id);
        wake_.notify_all();
    }

    void cancel_all() override {
        std::lock_guard<std::mutex> lock(mutex_);
        cancel_all_ = true;
        wake_.notify_all();
    }

    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        (void)name;
        throw Error(ErrorKind::Unsupported, dir,
                    "LoRA adapters are not served by the engine yet (multi-LoRA batching is the next step)");
    }
    void unload_adapter(const std::string& name) override {
        throw Error(ErrorKind::NotFound, "no adapter named '" + name + "' is loaded");
    }
    std::vector<AdapterInfo> adapters() const override { return {}; }

    void set_stats_listener(std::function<void(const StepStats&)> listener) override {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_listener_ = std::move(listener);
    }

    void set_paused(bool paused) override {
        std::lock_guard<std::mutex> lock(mutex_);
        paused_ = paused;
        step_budget_ = 0;
        wake_.notify_all();
    }

    void step_once() override {
        std::lock_guard<std::mutex> lock(mutex_);
        ++step_budget_;
        wake_.notify_all();
    }

    void wait_idle() override {
        std::unique_lock<std::mutex> lock(mutex_);
        idle_changed_.wait(lock, [this] { return idle_; });
    }

    const ModelConfig& model_config() const override { return model_->config(); }
    const GenerationConfig& generation_config() const override { return model_->generation_config(); }

private:
    void run();
    void take_submission(Submission& submission);
    void apply_cancellations(const std::set<RequestId>& ids, bool all);
    void decode_running(StepStats& stats);
    void admit_and_prefill(StepStats& stats);
    void choose_and_emit(at::Tensor logits, const std::vector<LiveRequest*>& rows);
    void drop_finished();
    void fail_rows(const std::vector<LiveRequest*>& rows, const std::string& message);
    void finish_all_cancelled();
    scheduler::BatchShape running_shape() const;

    EngineOptions options_;
    std::unique_ptr<models::Model> model_;
    std::unique_ptr<Tokenizer> tokenizer_;

    // Shared with other threads, under mutex_.
    mutable std::mutex mutex_;
    std::condition_variable wake_, idle_changed_;
    std::vector<Submission> incoming_;
    std::set<RequestId> cancels_;
    bool cancel_all_ = false;
    bool stop_ = false;
    bool paused_ = false;
    int64_t step_budget_ = 0;
    bool idle_ = true;
    RequestId next_id_ = 1;
    std::function<void(const StepStats&)> stats_listener_;

    // Engine thread only.
    std::deque<std::unique_ptr<LiveRequest>> waiting_;
    std::vector<std::unique_ptr<LiveRequest>> running_;   // row i of state_ is running_[i]
    models::DecodeState state_;
    int64_t step_ = 0;
    std::thread thread_;
};

void EngineImpl::run() {
    set_compute_threads(options_.threads);
    c10::InferenceMode inference_mode;  // thread-local: must be entered on this thread
    while (true) {
        std::vector<Submission> submissions;
        std::set<RequestId> cancels;
        bool cancel_all = false;
        bool run_step = false;
        std::function<void(const StepStats&)> listener;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            auto has_work = [this] { return !incoming_.empty() || !waiting_.empty() || !running_.empty(); };
            wake_.wait(lock, [&] {
                return stop_ || !cancels_.empty() || cancel_all_ ||
                       (has_work() && (!paused_ || step_budget_ > 0));
            });
            if (stop_) break;
            cancels.swap(cancels_);
            cancel_all = std::exchange(cancel_all_, false);
            if (has_work() && (!paused_ || step_budget_ > 0)) {
                if (paused_) --step_budget_;
                submissions.swap(incoming_);
                run_step = true;
            }
            listener = stats_listener_;
        }

        for (auto& s : submissions) take_submission(s);
        apply_cancellations(cancels, cancel_all);

        if (run_step) {
            StepStats stats;
            stats.step = step_;
            const auto started = Clock::now();
            decode_running(stats);
            admit_and_prefill(stats);
            drop_finished();
            stats.wall_ms = engine_detail::ms_between(started, Clock::now());
            stats.queue_depth = static_cast<int64_t>(waiting_.size());
            stats.kv_bytes_allocated = running_.empty() ? 0 : state_.bytes_allocated();
            stats.kv_bytes_in_use =
                running_.empty() ? 0 : state_.self_cache.bytes_in_use() + state_.encoder.bytes_allocated();
            if (stats.rows > 0) {
                ++step_;
                if (listener) listener(stats);
            }
        }

        std::lock_guard<std::mutex> lock(mutex_);
        idle_ = incoming_.empty() && waiting_.empty() && running_.empty();
        if (idle_) idle_changed_.notify_all();
    }
    finish_all_cancelled();
    std::lock_guard<std::mutex> lock(mutex_);
    idle_ = true;
    idle_changed_.notify_all();
}

void EngineImpl::take_submission(Submission& s) {
    auto live = std::make_unique<LiveRequest>();
    live->id = s.id;
    live->sink = std::move(s.sink);
    live->submitted = s.submitted;
    live->client_id = s.request.client_id;
    try {
        live->prepare(s.request, *model_, tokenizer_.get());
    } catch (const std::exception& e) {
        live->finish(FinishReason::Error, e.what());
        return;
    }
    waiting_.push_back(std::move(live));
}

void EngineImpl::apply_cancellations(const std::set<RequestId>& ids, bool all) {
    if (ids.empty() && !all) return;
    auto wanted = [&](RequestId id) { return all || ids.count(id) > 0; };
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (wanted((*it)->id)) {
            (*it)->finish(FinishReason::Cancelled);
            it = waiting_.erase(it);
        } else {
            ++it;
        }
    }
    // Running rows finish now and leave the batch at the end of the next step (or right away
    // when no step runs, e.g. while paused).
    for (auto& r : running_)
        if (!r->finished && wanted(r->id)) r->finish(FinishReason::Cancelled);
    bool any_finished = std::any_of(running_.begin(), running_.end(), [](auto& r) { return r->finished; });
    if (any_finished) drop_finished();
}

scheduler::BatchShape EngineImpl::running_shape() const {
    scheduler::BatchShape shape;
    for (const auto& r : running_) shape = shape.with(r->demand());
    return shape;
}

void EngineImpl::decode_running(StepStats& stats) {
    if (running_.empty()) return;
    std::vector<int64_t> last;
    std::vector<LiveRequest*> rows;
    last.reserve(running_.size());
    for (auto& r : running_) {
        last.push_back(r->input_ids.back());
        rows.push_back(r.get());
        stats.row_requests.push_back(r->id);
        stats.row_prefill.push_back(false);
    }
    // A decode step computes exactly one position per row: no padded positions. Rows of different
    // lengths waste cache slots instead, which kv_bytes_allocated vs kv_bytes_in_use shows.
    stats.rows += static_cast<int64_t>(rows.size());
    stats.decode_tokens += static_cast<int64_t>(rows.size());
    try {
        at::Tensor tokens = at::tensor(last, at::TensorOptions().dtype(at::kLong)).to(model_->options().device());
        at::Tensor logits = model_->decode_step(state_, tokens);
        choose_and_emit(logits, rows);
    } catch (const std::exception& e) {
        fail_rows(rows, std::string("decoding failed: ") + e.what());
    }
}

void EngineImpl::admit_and_prefill(StepStats& stats) {
    if (waiting_.empty()) return;
    if (options_.static_batching && !running_.empty()) return;

    std::deque<scheduler::Demand> demands;
    for (auto& w : waiting_) demands.push_back(w->demand());
    scheduler::Limits limits;
    limits.max_batch_size = options_.max_batch_size;
    limits.max_batch_tokens = options_.max_batch_tokens;
    const auto decision = scheduler::admit(demands, running_shape(), limits);
    for (size_t i = 0; i < waiting_.size(); ++i) {
        // admit() counts how often a request was passed over; carry that across steps.
        for (const auto& d : demands)
            if (d.id == waiting_[i]->id) waiting_[i]->skipped = d.skipped;
    }

    std::set<uint64_t> admitted(decision.admitted.begin(), decision.admitted.end());
    std::set<uint64_t> rejected(decision.rejected.begin(), decision.rejected.end());
    std::vector<std::unique_ptr<LiveRequest>> fresh;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (rejected.count((*it)->id)) {
            (*it)->finish(FinishReason::Error,
                          "request needs " + std::to_string((*it)->demand().prompt_tokens + (*it)->demand().max_new_tokens) +
                              " positions, more than the engine's max_batch_tokens (" +
                              std::to_string(options_.max_batch_tokens) + ") allows");
            it = waiting_.erase(it);
        } else if (admitted.count((*it)->id)) {
            fresh.push_back(std::move(*it));
            it = waiting_.erase(it);
        } else {
            ++it;
        }
    }
    if (fresh.empty()) return;

    std::vector<std::vector<int64_t>> prompts;
    std::vector<LiveRequest*> rows;
    int64_t longest = 0;
    const auto now = Clock::now();
    for (auto& f : fresh) {
        f->admitted = now;
        prompts.push_back(f->prompt_ids);
        rows.push_back(f.get());
        longest = std::max<int64_t>(longest, static_cast<int64_t>(f->prompt_ids.size()));
        stats.row_requests.push_back(f->id);
        stats.row_prefill.push_back(true);
    }
    for (auto& p : prompts) {
        stats.prefill_tokens += static_cast<int64_t>(p.size());
        stats.padded_tokens += longest - static_cast<int64_t>(p.size());
    }
    stats.rows += static_cast<int64_t>(rows.size());

    try {
        auto batch = models::TokenBatch::from_rows(prompts, model_->pad_token_id(), model_->options().device());
        auto [state, logits] = model_->prefill(batch);
        choose_and_emit(logits, rows);
        if (running_.empty()) {
            state_ = std::move(state);
        } else {
            state_.concatenate(state);
        }
        for (auto& f : fresh) running_.push_back(std::move(f));
    } catch (const std::exception& e) {
        fail_rows(rows, std::string("prefill failed: ") + e.what());
    }
}

void EngineImpl::choose_and_emit(at::Tensor logits, const std::vector<LiveRequest*>& rows) {
    std::vector<sampling::LogitsRow> logits_rows;
    std::vector<at::Generator> generators;
    logits_rows.reserve(rows.size());
    for (auto* r : rows) {
        logits_rows.push_back(r->logits_row());
        generators.push_back(r->generator);
    }
    logits = logits.to(at::kFloat).contiguous();
    sampling::process_logits(logits, logits_rows);
    const auto choices = sampling::choose_next_tokens(logits, logits_rows, generators);
    for (size_t i = 0; i < rows.size(); ++i) rows[i]->accept(choices[i], tokenizer_.get());
}

void EngineImpl::drop_finished() {
    std::vector<int64_t> keep;
    for (size_t i = 0; i < running_.size(); ++i)
        if (!running_[i]->finished) keep.push_back(static_cast<int64_t>(i));
    if (keep.size() == running_.size()) return;
    std::vector<std::unique_ptr<LiveRequest>> kept;
    for (int64_t i : keep) kept.push_back(std::move(running_[static_cast<size_t>(i)]));
    running_.swap(kept);
    if (running_.empty()) {
        state_ = models::DecodeState();
    } else {
        state_.filter(keep);
    }
}

void EngineImpl::fail_rows(const std::vector<LiveRequest*>& rows, const std::string& message) {
    for (auto* r : rows)
        if (!r->finished) r->finish(FinishReason::Error, message);
}

void EngineImpl::finish_all_cancelled() {
    for (auto& s : incoming_) {
        LiveRequest live;
        live.id = s.id;
        live.client_id = s.request.client_id;
        live.sink = s.sink;
        live.submitted = s.submitted;
        live.finish(FinishReason::Cancelled);
    }
    incoming_.clear();
    for (auto& w : waiting_) w->finish(FinishReason::Cancelled);
    waiting_.clear();
    for (auto& r : running_)
        if (!r->finished) r->finish(FinishReason::Cancelled);
    running_.clear();
    state_ = models::DecodeState();
}

}  // namespace

std::unique_ptr<Engine> Engine::create(const EngineOptions& options) {
    if (options.max_batch_size < 1)
        throw Error(ErrorKind::InvalidArgument, "max_batch_size must be at least 1");
    if (options.max_batch_tokens < 1)
        throw Error(ErrorKind::InvalidArgument, "max_batch_tokens must be at least 1");
    models::LoadOptions load;
    load.dtype = parse_dtype(options.dtype);
    load.device = parse_device(options.device);
    auto model = models::load_model(options.model_dir, load);
    std::unique_ptr<Tokenizer> tokenizer;
    try {
        tokenizer = load_tokenizer(options.model_dir);
    } catch (const Error& e) {
        // A checkpoint without tokenizer files still serves requests given as input_ids.
        if (e.kind() != ErrorKind::NotFound) throw;
    }
    return std::make_unique<EngineImpl>(options, std::move(model), std::move(tokenizer));
}

}  // namespace lorascope
