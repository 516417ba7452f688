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

#include "adapters/adapter_registry.h"
#include "adapters/multi_lora_hook.h"
#include "engine_request.h"
#include "lorascope/error.h"
#include "lorascope/runtime.h"
#include "lorascope/tokenizer.h"
#include "models/model.h"
#include "scheduler/admission.h"
#include "scheduler/prefill_groups.h"
#include "util/scratch_thread.h"

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

// What one more prefill pass costs, in padded prompt positions: a pass reads every weight and the
// LM head once more. Estimated from the weight bytes against the per-position FLOPs of t5-small and
// an 8-layer BLOOM of width 1024 (each lands at 50-100 positions); the split is not sensitive to it.
constexpr int64_t kPrefillPassTokens = 64;

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
        : options_(options),
          model_(std::move(model)),
          tokenizer_(std::move(tokenizer)),
          registry_(*model_, options.adapter_memory_budget) {
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

    // Validation and tensor conversion run on a short-lived thread while the caller waits (see
    // util/scratch_thread.h); the engine keeps stepping.
    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        return util::run_on_scratch_thread([&] { return registry_.load(name, dir); });
    }
    // New requests naming the adapter fail at once and queued ones when they are admitted; this
    // call returns once the running requests that pin it have finished.
    void unload_adapter(const std::string& name) override {
        if (std::this_thread::get_id() == thread_.get_id())
            throw Error(ErrorKind::InvalidArgument,
                        "unload_adapter('" + name + "') called from the engine thread (a sink callback) would wait forever");
        registry_.unload(name);
    }
    std::vector<AdapterInfo> adapters() const override { return registry_.list(); }

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
    // Prefills these newcomers as one padded batch and appends them to the running batch.
    void prefill_pass(std::vector<std::unique_ptr<LiveRequest>> fresh, StepStats& stats);
    void prefill_encoder_decoder(std::vector<std::unique_ptr<LiveRequest>> fresh,
                                 const std::vector<std::vector<size_t>>& passes, StepStats& stats);
    // The prompts of `fresh` (one per row: beams repeat theirs) and their share of the step's stats.
    std::vector<std::vector<int64_t>> prompt_rows(const std::vector<std::unique_ptr<LiveRequest>>& fresh,
                                                  StepStats& stats) const;
    void join_running(models::DecodeState state, std::vector<std::unique_ptr<LiveRequest>> fresh);
    // The LoRA hook for these requests' rows (in batch order); counts their rows per adapter.
    // Counts each row's adapter into stats.rows_per_adapter unless stats is null.
    // `stack`: the decoding step passes lora_stack_ (see adapters::LoraStack).
    adapters::MultiLoraHook lora_hook(const std::vector<LiveRequest*>& requests, StepStats* stats,
                                      adapters::LoraStack* stack = nullptr) const;
    // Chooses the next token of every row; returns the row order the state must take next
    // (beam search reorders its rows), or an empty vector when no row moved.
    std::vector<int64_t> choose_and_emit(at::Tensor logits, const std::vector<LiveRequest*>& requests);
    void drop_finished();
    void fail_rows(const std::vector<LiveRequest*>& rows, const std::string& message);
    void finish_all_cancelled();
    scheduler::BatchShape running_shape() const;

    EngineOptions options_;
    std::unique_ptr<models::Model> model_;
    std::unique_ptr<Tokenizer> tokenizer_;
    adapters::AdapterRegistry registry_;   // declared before the requests, whose leases it must outlive

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
    // Requests in batch-row order: running_[0] holds rows [0, rows()), the next one follows, ...
    std::vector<std::unique_ptr<LiveRequest>> running_;
    models::DecodeState state_;
    // Stacked adapter factors for mixed-adapter decoding steps, kept while the set of adapters in
    // the batch stays the same.
    adapters::LoraStack lora_stack_;
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
            // Submissions are always taken, even while paused, so that a cancellation that
            // arrives with (or after) its submission finds the request.
            submissions.swap(incoming_);
            if (!submissions.empty() || has_work()) {
                if (!paused_ || step_budget_ > 0) {
                    if (paused_) --step_budget_;
                    run_step = true;
                }
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
            stats.adapter_bytes = registry_.resident_bytes() + lora_stack_.bytes();
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
    if (!live->adapter_name.empty()) {
        const std::string why = registry_.unavailable_reason(live->adapter_name);
        if (!why.empty()) {
            live->finish(FinishReason::Error, why);
            return;
        }
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
    for (auto& r : running_) {
        r->append_last_tokens(last);
        rows.push_back(r.get());
        for (int64_t j = 0; j < r->rows(); ++j) {
            stats.row_requests.push_back(r->id);
            stats.row_prefill.push_back(false);
        }
    }
    // A decode step computes exactly one position per row: no padded positions. Rows of different
    // lengths waste cache slots instead, which kv_bytes_allocated vs kv_bytes_in_use shows.
    stats.rows += static_cast<int64_t>(last.size());
    stats.decode_tokens += static_cast<int64_t>(last.size());
    try {
        at::Tensor tokens = at::tensor(last, at::TensorOptions().dtype(at::kLong)).to(model_->options().device());
        const adapters::MultiLoraHook hook = lora_hook(rows, &stats, &lora_stack_);
        at::Tensor logits = model_->decode_step(state_, tokens, hook.empty() ? nullptr : &hook);
        const auto order = choose_and_emit(logits, rows);
        if (!order.empty()) state_.filter(order);
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
    // Pin each newcomer's adapter (reloading it when it was evicted); a request whose adapter is
    // gone or cannot be reloaded ends with that error and the others go on.
    for (auto it = fresh.begin(); it != fresh.end();) {
        if (!(*it)->adapter_name.empty()) {
            try {
                (*it)->adapter = registry_.acquire((*it)->adapter_name);
            } catch (const std::exception& e) {
                (*it)->finish(FinishReason::Error, e.what());
                it = fresh.erase(it);
                continue;
            }
        }
        ++it;
    }
    if (fresh.empty()) return;

    const auto now = Clock::now();
    std::vector<int64_t> prompt_tokens, request_rows;
    for (auto& f : fresh) {
        f->admitted = now;
        prompt_tokens.push_back(static_cast<int64_t>(f->prompt_ids.size()));
        request_rows.push_back(f->rows());
    }
    // Newcomers of similar length share a prefill pass; all passes run in this step.
    const auto passes = scheduler::prefill_groups(prompt_tokens, request_rows, kPrefillPassTokens);
    if (model_->is_encoder_decoder()) {
        prefill_encoder_decoder(std::move(fresh), passes, stats);
        return;
    }
    for (const auto& pass : passes) {
        std::vector<std::unique_ptr<LiveRequest>> members;
        for (size_t i : pass) members.push_back(std::move(fresh[i]));
        prefill_pass(std::move(members), stats);
    }
}

std::vector<std::vector<int64_t>> EngineImpl::prompt_rows(const std::vector<std::unique_ptr<LiveRequest>>& fresh,
                                                         StepStats& stats) const {
    std::vector<std::vector<int64_t>> prompts;
    int64_t longest = 0;
    for (auto& f : fresh) {
        longest = std::max<int64_t>(longest, static_cast<int64_t>(f->prompt_ids.size()));
        // Beams start as identical copies of the prompt, as in transformers.
        for (int64_t j = 0; j < f->rows(); ++j) {
            prompts.push_back(f->prompt_ids);
            stats.row_requests.push_back(f->id);
            stats.row_prefill.push_back(true);
        }
    }
    for (auto& p : prompts) {
        stats.prefill_tokens += static_cast<int64_t>(p.size());
        stats.padded_tokens += longest - static_cast<int64_t>(p.size());
    }
    stats.rows += static_cast<int64_t>(prompts.size());
    return prompts;
}

void EngineImpl::join_running(models::DecodeState state, std::vector<std::unique_ptr<LiveRequest>> fresh) {
    if (running_.empty()) {
        state_ = std::move(state);
    } else {
        state_.concatenate(state);
    }
    for (auto& f : fresh) running_.push_back(std::move(f));
}

void EngineImpl::prefill_pass(std::vector<std::unique_ptr<LiveRequest>> fresh, StepStats& stats) {
    std::vector<LiveRequest*> rows;
    for (auto& f : fresh) rows.push_back(f.get());
    const auto prompts = prompt_rows(fresh, stats);
    try {
        auto batch = models::TokenBatch::from_rows(prompts, model_->pad_token_id(), model_->options().device());
        const adapters::MultiLoraHook hook = lora_hook(rows, &stats);
        auto [state, logits] = model_->prefill(batch, hook.empty() ? nullptr : &hook);
        const auto order = choose_and_emit(logits, rows);
        if (!order.empty()) state.filter(order);
        join_running(std::move(state), std::move(fresh));
    } catch (const std::exception& e) {
        fail_rows(rows, std::string("prefill failed: ") + e.what());
    }
}

// Encoder passes group prompts of similar length (little padding); the decoder's first step then
// runs once for every newcomer. A decoder step reads all decoder and LM-head weights whatever its
// row count, so one per pass cost as much as a whole decode step each time: 11 passes for W1's 64
// prompts spent a fifth of the prefill time on first steps.
void EngineImpl::prefill_encoder_decoder(std::vector<std::unique_ptr<LiveRequest>> fresh,
                                         const std::vector<std::vector<size_t>>& passes, StepStats& stats) {
    models::DecodeState joined;
    std::vector<std::unique_ptr<LiveRequest>> started;
    std::vector<LiveRequest*> started_rows;
    for (const auto& pass : passes) {
        std::vector<std::unique_ptr<LiveRequest>> members;
        std::vector<LiveRequest*> rows;
        for (size_t i : pass) {
            rows.push_back(fresh[i].get());
            members.push_back(std::move(fresh[i]));
        }
        const auto prompts = prompt_rows(members, stats);
        try {
            auto batch = models::TokenBatch::from_rows(prompts, model_->pad_token_id(), model_->options().device());
            const adapters::MultiLoraHook hook = lora_hook(rows, &stats);
            models::DecodeState state = model_->start(batch, hook.empty() ? nullptr : &hook);
            if (started.empty()) {
                joined = std::move(state);
            } else {
                joined.concatenate(state);
            }
            for (auto& m : members) {
                started_rows.push_back(m.get());
                started.push_back(std::move(m));
            }
        } catch (const std::exception& e) {
            fail_rows(rows, std::string("prefill failed: ") + e.what());
        }
    }
    if (started.empty()) return;
    try {
        const adapters::MultiLoraHook hook = lora_hook(started_rows, nullptr);  // counted per pass above
        at::Tensor logits = model_->first_decoder_step(joined, hook.empty() ? nullptr : &hook);
        const auto order = choose_and_emit(logits, started_rows);
        if (!order.empty()) joined.filter(order);
        join_running(std::move(joined), std::move(started));
    } catch (const std::exception& e) {
        fail_rows(started_rows, std::string("prefill failed: ") + e.what());
    }
}

std::vector<int64_t> EngineImpl::choose_and_emit(at::Tensor logits, const std::vector<LiveRequest*>& requests) {
    logits = logits.to(at::kFloat).contiguous();
    // Single-sequence rows are processed together; each beam request works on its own rows.
    std::vector<int64_t> single_rows;
    std::vector<LiveRequest*> singles;
    std::vector<sampling::LogitsRow> logits_rows;
    std::vector<at::Generator> generators;
    std::vector<int64_t> order;
    bool reordered = false;
    int64_t offset = 0;
    for (auto* r : requests) {
        const int64_t n = r->rows();
        if (r->beams) {
            const auto source = r->beam_step(logits.narrow(0, offset, n), tokenizer_.get());
            for (int64_t j = 0; j < n; ++j) {
                order.push_back(offset + source[static_cast<size_t>(j)]);
                reordered = reordered || source[static_cast<size_t>(j)] != j;
            }
        } else {
            single_rows.push_back(offset);
            singles.push_back(r);
            r->append_logits_rows(logits_rows);
            generators.push_back(r->generator);
            order.push_back(offset);
        }
        offset += n;
    }
    if (!singles.empty()) {
        at::Tensor scores = static_cast<int64_t>(singles.size()) == logits.size(0)
                                ? logits
                                : logits.index_select(0, at::tensor(single_rows, at::kLong).to(logits.device()));
        sampling::process_logits(scores, logits_rows);
        const auto choices = sampling::choose_next_tokens(scores, logits_rows, generators);
        for (size_t i = 0; i < singles.size(); ++i) singles[i]->accept(choices[i], tokenizer_.get());
    }
    if (!reordered) order.clear();
    return order;
}

adapters::MultiLoraHook EngineImpl::lora_hook(const std::vector<LiveRequest*>& requests, StepStats* stats,
                                              adapters::LoraStack* stack) const {
    std::vector<std::shared_ptr<const adapters::LoraWeights>> row_weights;
    for (auto* r : requests) {
        const int64_t n = r->rows();
        if (stats) {
            auto it = std::find_if(stats->rows_per_adapter.begin(), stats->rows_per_adapter.end(),
                                   [&](const auto& entry) { return entry.first == r->adapter_name; });
            if (it == stats->rows_per_adapter.end()) {
                stats->rows_per_adapter.emplace_back(r->adapter_name, n);
            } else {
                it->second += n;
            }
        }
        for (int64_t j = 0; j < n; ++j) row_weights.push_back(r->adapter.weights());
    }
    return adapters::MultiLoraHook(row_weights, model_->options().device(), stack);
}

void EngineImpl::drop_finished() {
    std::vector<int64_t> keep;
    std::vector<std::unique_ptr<LiveRequest>> kept;
    int64_t offset = 0;
    for (auto& r : running_) {
        const int64_t n = r->rows();
        if (!r->finished) {
            for (int64_t j = 0; j < n; ++j) keep.push_back(offset + j);
            kept.push_back(std::move(r));
        }
        offset += n;
    }
    if (kept.size() == running_.size()) {
        running_.swap(kept);
        return;
    }
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
    auto model = util::run_on_scratch_thread([&] { return models::load_model(options.model_dir, load); });
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
