// The background engine: one thread that owns the model, the waiting queue and the running batch.
//
// Each loop iteration takes what other threads handed over (engine/mailbox.h) and runs one step:
//   1. admission at the step boundary (engine/request_scheduler.h): the row limit, the token budget and
//      the KV cache decide who joins; evicted adapters reload off this thread;
//   2. prefill work under the per-step budget, newcomers join, every running row decodes one
//      token, finished requests leave (engine/batch_runner.h);
//   3. StepStats go to the listener (engine/emitter.h).
// Sinks are called from this thread only, so a request's events arrive in order; every call into
// user code and every step is guarded, so the thread outlives whatever goes wrong in a step.
#include "lorascope/engine.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <future>
#include <optional>
#include <thread>

#include "adapters/adapter_registry.h"
#include "engine/batch_runner.h"
#include "engine/compute_threads.h"
#include "runtime/compute_choice.h"
#include "runtime/allocator_policy.h"
#include "engine/emitter.h"
#include "engine/live_request.h"
#include "engine/mailbox.h"
#include "engine/request_scheduler.h"
#include "lorascope/error.h"
#include "lorascope/runtime.h"
#include "lorascope/tokenizer.h"
#include "models/model.h"
#include "ops/cpu_matmul.h"
#include "util/scratch_thread.h"

namespace lorascope {

namespace {

using engine_detail::Clock;
using engine_detail::LiveRequest;

int64_t available_memory_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return int64_t(8) << 30;
}

// The KV cache's blocks: kv_cache_mb when given; else room for max_batch_size rows of 2048
// positions, capped at 40% of the available memory (CPU) or 8 GiB (devices), and at least one row
// of 512. On the CPU the pool is allocated empty and touched a block at a time, so an unused
// budget costs address space, not memory.
int64_t kv_cache_blocks(const EngineOptions& options, const models::Model& model) {
    const int64_t block_bytes =
        models::KvPool::bytes_per_block(model.cache_shape(), model.cache_dtype());
    const int64_t bs = models::KvPool::kBlockSize;
    int64_t bytes = 0;
    if (options.kv_cache_mb > 0) {
        bytes = options.kv_cache_mb << 20;
    } else {
        const int64_t wanted = options.max_batch_size * (2048 / bs) * block_bytes;
        const int64_t cap = model.options().device().is_cpu() ? available_memory_bytes() / 10 * 4 : int64_t(8) << 30;
        bytes = std::max(std::min(wanted, cap), (512 / bs) * block_bytes);
    }
    return std::max<int64_t>(1, bytes / block_bytes);
}

batching::TimePolicy time_policy(const EngineOptions& options) {
    batching::TimePolicy p;
    p.target_ms = options.tpot_target_ms;
    p.tail_share = options.tpot_tail_share;
    return p;
}

class EngineImpl final : public Engine {
public:
    EngineImpl(const EngineOptions& options, std::unique_ptr<models::Model> model, std::unique_ptr<Tokenizer> tokenizer,
               std::optional<ModelChatTemplates> chat_templates, std::string no_chat_templates, bool products_on_pool)
        : options_(options),
          products_on_pool_(products_on_pool),
          model_(std::move(model)),
          tokenizer_(std::move(tokenizer)),
          budget_{options.max_batch_tokens, options.max_batch_size, model_->config().context_tokens(),
                  model_->is_encoder_decoder()},
          chat_templates_(std::move(chat_templates)),
          no_chat_templates_(std::move(no_chat_templates)),
          registry_(*model_, options.adapter_memory_budget),
          pool_(model_->make_pool(kv_cache_blocks(options, *model_), /*growable=*/false)),
          scheduler_(*model_, registry_, *pool_, options_),
          // Static batching is the comparison point without joins: its batch is prefilled at once.
          runner_(*model_, pool_, tokenizer_.get(), options.static_batching ? 0 : options.prefill_budget_tokens,
                  options.static_batching ? 0 : options.prefill_chunk_tokens, time_policy(options)) {
        thread_ = std::thread([this] { run(); });
        started_.get_future().wait();   // requests' clocks start once the engine has (calibrate())
    }

    ~EngineImpl() override {
        registry_.shutdown();   // an unload_adapter() waiting for pins returns instead of waiting for ever
        mailbox_.stop();
        thread_.join();
    }

    // Tokenizing and validation run here, on the caller's thread; the engine thread gets a
    // prepared request (or the error to finish it with, so that sinks still hear from it there).
    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override {
        auto live = std::make_unique<LiveRequest>();
        live->id = mailbox_.reserve_id();
        live->sink = std::move(sink);
        live->submitted = Clock::now();
        live->client_id = request.client_id;
        engine_detail::Submission submission;
        try {
            live->prepare(request, *model_, {tokenizer_.get(), chat_templates(), no_chat_templates_}, budget_);
            if (request.merge) {
                if (!request.adapter.empty())
                    throw Error(ErrorKind::InvalidArgument, "request " + request.client_id,
                                "give an adapter or merged adapters, not both");
                live->adapter_name = registry_.declare_merge(*request.merge);
            }
            if (!live->adapter_name.empty()) submission.error = registry_.unavailable_reason(live->adapter_name);
        } catch (const std::exception& e) {
            submission.error = e.what();
        }
        const RequestId id = live->id;
        submission.request = std::move(live);
        mailbox_.post(std::move(submission));
        return id;
    }

    void cancel(RequestId id) override { mailbox_.cancel(id); }
    void cancel_all() override { mailbox_.cancel_all(); }

    // Validation and tensor conversion run on a short-lived thread while the caller waits (see
    // util/scratch_thread.h); the engine keeps stepping.
    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        return util::run_on_scratch_thread([&] { return registry_.load(name, dir); });
    }
    // New requests naming the adapter fail at once and queued ones when they are admitted; this
    // call returns once the running requests that pin it have finished (or the engine goes away).
    void unload_adapter(const std::string& name) override {
        if (std::this_thread::get_id() == thread_.get_id())
            throw Error(ErrorKind::InvalidArgument,
                        "unload_adapter('" + name + "') called from the engine thread (a sink callback) would wait forever");
        registry_.unload(name);
    }
    std::vector<AdapterInfo> adapters() const override { return registry_.list(); }

    void set_stats_listener(std::function<void(const StepStats&)> listener) override {
        stats_.set(std::move(listener));
    }
    void set_paused(bool paused) override { mailbox_.set_paused(paused); }
    void step_once() override { mailbox_.step_once(); }
    void wait_idle() override { mailbox_.wait_idle(); }

    const ModelConfig& model_config() const override { return model_->config(); }
    const GenerationConfig& generation_config() const override { return model_->generation_config(); }
    const ModelChatTemplates* chat_templates() const override { return chat_templates_ ? &*chat_templates_ : nullptr; }

private:
    void run();
    void calibrate();
    void take(engine_detail::Inbox& inbox);
    void step();
    bool has_work() const { return !scheduler_.empty() || !runner_.empty(); }
    void shut_down();

    EngineOptions options_;
    bool products_on_pool_;  // the linears run on our pool's kernels (ops::cpu_matmul_runs_on_pool)
    std::unique_ptr<models::Model> model_;
    std::unique_ptr<Tokenizer> tokenizer_;
    RequestBudget budget_;                 // what one request may occupy (checked at submit)
    std::optional<ModelChatTemplates> chat_templates_;
    std::string no_chat_templates_;   // why the model has no usable chat templates
    adapters::AdapterRegistry registry_;   // declared before the requests, whose leases it must outlive
    std::shared_ptr<models::KvPool> pool_;
    engine_detail::Mailbox mailbox_;
    engine_detail::StatsPublisher stats_;
    // Engine thread only.
    engine_detail::RequestScheduler scheduler_;
    engine_detail::BatchRunner runner_;
    int64_t step_ = 0;
    std::optional<engine_detail::ComputeThreads> threads_;  // made on the engine thread
    std::promise<void> started_;   // set by the engine thread once it can take requests
    std::thread thread_;
};

void EngineImpl::run() {
    threads_.emplace(options_.threads, options_.adaptive_threads, products_on_pool_);
    c10::InferenceMode inference_mode;  // thread-local: must be entered on this thread
    calibrate();
    while (true) {
        engine_detail::Inbox inbox = mailbox_.wait(has_work());
        if (inbox.stop) break;
        take(inbox);
        if (inbox.run_step) step();
        mailbox_.set_idle(!has_work());
    }
    shut_down();
}

// Under a target, the first wave's row limit needs a measured decoding step
// (engine/decode_calibration.h; BatchRunner::calibrate does nothing without a target), timed here
// on the threads the steps use; create() waits for it. A failure leaves nothing measured: the first
// wave is then the batch size, as before.
void EngineImpl::calibrate() {
    try {
        runner_.calibrate(options_.max_batch_size);
    } catch (const std::exception&) {
    }
    started_.set_value();
}

void EngineImpl::take(engine_detail::Inbox& inbox) {
    for (auto& s : inbox.submissions) {
        if (!s.error.empty()) {
            s.request->finish(FinishReason::Error, s.error);
            continue;
        }
        scheduler_.enqueue(std::move(s.request));
    }
    if (inbox.cancels.empty() && inbox.cancel_below == 0) return;
    auto wanted = [&](RequestId id) { return id < inbox.cancel_below || inbox.cancels.count(id) > 0; };
    scheduler_.cancel(wanted);
    // Running rows finish now and leave the batch at once (also while paused).
    runner_.cancel(wanted);
}

void EngineImpl::step() {
    StepStats stats;
    stats.step = step_;
    stats.threads = threads_->before_step();
    const auto started = Clock::now();
    scheduler_.end_intake();  // what arrives from now on arrived after this boundary
    try {
        runner_.drop_finished();  // leaves that failed at the last boundary
        stats.row_limit = options_.max_batch_size;
        if (!options_.static_batching || runner_.empty()) {
            scheduler_.order(runner_.prompt_weight(options_.max_batch_size));
            const auto limit = runner_.row_limit(scheduler_.front_prompt_tokens(), options_.max_batch_size);
            stats.row_limit = limit.rows;
            stats.row_plan_ms = limit.plan_ms;
            for (auto& r : scheduler_.admit(runner_.shape(), stats.row_limit)) runner_.add(std::move(r));
        }
        runner_.step(stats, scheduler_.depth());
    } catch (const std::exception& e) {
        // Nothing in a step should get here (passes isolate their failures); if something does,
        // the requests in the batch end with the cause and the engine goes on with the queue.
        runner_.finish_all(FinishReason::Error, std::string("engine step failed: ") + e.what());
    }
    stats.wall_ms = engine_detail::ms_between(started, Clock::now());
    stats.queue_depth = scheduler_.depth();
    stats.adapter_bytes = registry_.resident_bytes() + runner_.lora_stack_bytes();
    runner_.cache_stats(stats);
    if (stats.rows > 0) {
        ++step_;
        stats_.publish(stats);
    }
}

void EngineImpl::shut_down() {
    for (auto& s : mailbox_.drain()) s.request->finish(FinishReason::Cancelled);
    scheduler_.cancel([](RequestId) { return true; });
    runner_.finish_all(FinishReason::Cancelled);
    mailbox_.set_idle(true);
}

// The prefill budget and the latency target: one meaning each, and no combination that would be
// silently ignored.
void check_latency_options(const EngineOptions& options) {
    if (options.prefill_budget_tokens < kPrefillBudgetInTime)
        throw Error(ErrorKind::InvalidArgument, "prefill_budget_tokens must be >= 0 (tokens per step; 0 = no limit), or "
                                                "kPrefillBudgetInTime (-1) for the budget in time");
    if (!std::isfinite(options.tpot_target_ms) || options.tpot_target_ms < 0)
        throw Error(ErrorKind::InvalidArgument, "tpot_target_ms must be a finite number >= 0 (0 = no target)");
    if (!std::isfinite(options.tpot_tail_share) || options.tpot_tail_share < 0 || options.tpot_tail_share > 0.2)
        throw Error(ErrorKind::InvalidArgument, "tpot_tail_share must be within [0, 0.2] (the share of token gaps that may pass the target)");
    if (options.tpot_target_ms > 0 && (options.static_batching || options.prefill_budget_tokens != kPrefillBudgetInTime))
        throw Error(ErrorKind::InvalidArgument, "a time-per-output-token target needs continuous batching and the budget in "
                                                "time (no token prefill budget)");
}

}  // namespace

std::unique_ptr<Engine> Engine::create(const EngineOptions& options) {
    if (options.max_batch_size < 1)
        throw Error(ErrorKind::InvalidArgument, "max_batch_size must be at least 1");
    if (options.max_batch_tokens < 1)
        throw Error(ErrorKind::InvalidArgument, "max_batch_tokens must be at least 1");
    if (options.kv_cache_mb < 0) throw Error(ErrorKind::InvalidArgument, "kv_cache_mb must not be negative");
    check_latency_options(options);
    models::LoadOptions load =
        models::LoadOptions::from(runtime::choose_compute(options.dtype, options.device, options.kv_cache_dtype));
    if (load.device.is_cpu()) runtime::settle_cpu_allocator();
    load.progress = options.load_progress;
    auto model = util::run_on_scratch_thread([&] { return models::load_model(options.model_dir, load); });
    std::unique_ptr<Tokenizer> tokenizer;
    try {
        tokenizer = load_tokenizer(options.model_dir);
    } catch (const Error& e) {
        // A checkpoint without tokenizer files still serves requests given as input_ids.
        if (e.kind() != ErrorKind::NotFound) throw;
    }
    // A model without a (readable) chat template still serves prompts: conversation requests
    // finish with the reason.
    std::optional<ModelChatTemplates> chat_templates;
    std::string no_chat_templates;
    try {
        chat_templates = ModelChatTemplates::load(options.model_dir);
    } catch (const Error& e) {
        no_chat_templates = e.what();
    }
    const bool products_on_pool = load.cpu_matmul && ops::cpu_matmul_runs_on_pool(*load.cpu_matmul);
    return std::make_unique<EngineImpl>(options, std::move(model), std::move(tokenizer), std::move(chat_templates),
                                        std::move(no_chat_templates), products_on_pool);
}

}  // namespace lorascope
