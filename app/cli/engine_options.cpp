#include "engine_options.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>

#include "lorascope/error.h"
#include "lorascope/kernel_profile.h"
#include "lorascope/runtime.h"

namespace lorascope::cli {

namespace {

// --profile FILE: the engine behind a decorator that counts device kernels (Kineto, LibTorch 2.x)
// and engine steps from model load to teardown, then writes {"kernels", "steps",
// "kernels_per_step", ...} to FILE. A decorator keeps every command's own code unaware of it.
class ProfiledEngine final : public Engine {
public:
    ProfiledEngine(std::unique_ptr<Engine> inner, std::string path) : inner_(std::move(inner)), path_(std::move(path)) {
        inner_->set_stats_listener([this](const StepStats& s) {
            std::function<void(const StepStats&)> forward;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                ++steps_;
                forward = listener_;
            }
            if (forward) forward(s);
        });
    }

    void start() { profile_.start(); }

    ~ProfiledEngine() override {
        try {
            inner_->wait_idle();
            const KernelCounts counts = profile_.stop();
            int64_t steps = 0;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                steps = steps_;
            }
            nlohmann::json top = nlohmann::json::array();
            for (const auto& [name, n] : counts.top_kernels) top.push_back({{"name", name}, {"launches", n}});
            const nlohmann::json out = {
                {"kernels", counts.kernels}, {"memcpy", counts.memcpy}, {"memset", counts.memset}, {"steps", steps},
                {"kernels_per_step", steps ? static_cast<double>(counts.kernels) / static_cast<double>(steps) : 0.0},
                {"top_kernels", top},
                {"window", "from model load to engine teardown; device kernels of every thread"}};
            std::ofstream file(path_);
            if (file) file << out.dump(2) << "\n";
            if (!file) std::fprintf(stderr, "lorascope-cli: %s: cannot write the profile\n", path_.c_str());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lorascope-cli: profile not written: %s\n", e.what());
        }
        inner_->set_stats_listener(nullptr);
    }

    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override {
        return inner_->submit(std::move(request), std::move(sink));
    }
    void cancel(RequestId id) override { inner_->cancel(id); }
    void cancel_all() override { inner_->cancel_all(); }
    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override {
        return inner_->load_adapter(name, dir);
    }
    void unload_adapter(const std::string& name) override { inner_->unload_adapter(name); }
    std::vector<AdapterInfo> adapters() const override { return inner_->adapters(); }
    void set_stats_listener(std::function<void(const StepStats&)> listener) override {
        std::lock_guard<std::mutex> lock(mutex_);
        listener_ = std::move(listener);
    }
    void set_paused(bool paused) override { inner_->set_paused(paused); }
    void step_once() override { inner_->step_once(); }
    void wait_idle() override { inner_->wait_idle(); }
    const ModelConfig& model_config() const override { return inner_->model_config(); }
    const GenerationConfig& generation_config() const override { return inner_->generation_config(); }

private:
    std::unique_ptr<Engine> inner_;
    std::string path_;
    KernelProfile profile_;
    std::mutex mutex_;
    std::function<void(const StepStats&)> listener_;
    int64_t steps_ = 0;
};

// --batching continuous|static, --prefill-budget TOKENS (absent: the budget in time) and
// --tpot-target-ms MS --tpot-tail-share S, --queue-order arrival|pack (lorascope/engine.h says what
// each means).
void read_batching_policy(const Args& args, EngineOptions& options) {
    const std::string batching = args.get_or("batching", "continuous");
    if (batching != "continuous" && batching != "static")
        throw Error(ErrorKind::InvalidArgument, "--batching expects continuous or static, got '" + batching + "'");
    options.static_batching = batching == "static";
    const std::string order = args.get_or("queue-order", "arrival");
    if (order != "arrival" && order != "pack")
        throw Error(ErrorKind::InvalidArgument, "--queue-order expects arrival or pack, got '" + order + "'");
    options.queue_order = order == "pack" ? QueueOrder::Pack : QueueOrder::Arrival;
    options.tpot_target_ms = args.get_double("tpot-target-ms", 0);
    if (options.tpot_target_ms < 0)
        throw Error(ErrorKind::InvalidArgument, "--tpot-target-ms must be >= 0 (ms per output token; 0 = no target)");
    options.tpot_tail_share = args.get_double("tpot-tail-share", options.tpot_tail_share);
    if (options.tpot_tail_share < 0 || options.tpot_tail_share > 0.2)
        throw Error(ErrorKind::InvalidArgument, "--tpot-tail-share must be within [0, 0.2] (the share of token gaps that may pass the target)");
    if (options.tpot_target_ms > 0 && (options.static_batching || args.has("prefill-budget")))
        throw Error(ErrorKind::InvalidArgument,
                    "--tpot-target-ms sets the budget in time of continuous batching: drop --prefill-budget and --batching static");
}

}  // namespace

std::vector<std::string> engine_option_names() {
    return {"model", "threads", "device", "dtype", "kv-cache-dtype", "max-batch-size", "max-batch-tokens", "adapter",
            "adapter-memory-budget", "kv-cache-mb", "prefill-budget", "prefill-chunk", "profile", "batching",
            "tpot-target-ms", "tpot-tail-share", "thread-policy", "queue-order"};
}

EngineOptions engine_options_from(const Args& args) {
    EngineOptions options;
    options.model_dir = args.require("model");
    options.threads = static_cast<int>(args.get_int("threads", 0));
    options.device = args.get_or("device", "cpu");
    options.dtype = args.get_or("dtype", "float32");
    options.kv_cache_dtype = args.get_or("kv-cache-dtype", "auto");
    options.max_batch_size = args.get_int("max-batch-size", options.max_batch_size);
    options.max_batch_tokens = args.get_int("max-batch-tokens", options.max_batch_tokens);
    options.adapter_memory_budget = args.get_int("adapter-memory-budget", 0);
    if (options.adapter_memory_budget < 0)
        throw Error(ErrorKind::InvalidArgument, "--adapter-memory-budget must be >= 0 (bytes; 0 = unlimited)");
    options.kv_cache_mb = args.get_int("kv-cache-mb", 0);
    if (options.kv_cache_mb < 0)
        throw Error(ErrorKind::InvalidArgument, "--kv-cache-mb must be >= 0 (MiB; 0 = from the model and free memory)");
    options.prefill_budget_tokens = args.get_int("prefill-budget", kPrefillBudgetInTime);
    if (args.has("prefill-budget") && options.prefill_budget_tokens < 0)
        throw Error(ErrorKind::InvalidArgument,
                    "--prefill-budget must be >= 0 (prompt tokens per step; 0 = no limit; leave it out for the budget in time)");
    options.prefill_chunk_tokens = args.get_int("prefill-chunk", 0);
    if (options.prefill_chunk_tokens < 0)
        throw Error(ErrorKind::InvalidArgument, "--prefill-chunk must be >= 0 (decoder-only prompt chunk; 0 = the budget, at least 128)");
    read_batching_policy(args, options);
    if (options.threads < 0) throw Error(ErrorKind::InvalidArgument, "--threads must be >= 0");
    const std::string policy = args.get_or("thread-policy", "adaptive");
    if (policy != "adaptive" && policy != "fixed")
        throw Error(ErrorKind::InvalidArgument, "--thread-policy expects adaptive (fewer threads while other programs keep "
                                                "cores busy) or fixed, got '" + policy + "'");
    options.adaptive_threads = policy == "adaptive";
    if (options.max_batch_size < 1) throw Error(ErrorKind::InvalidArgument, "--max-batch-size must be >= 1");
    if (options.max_batch_tokens < 1) throw Error(ErrorKind::InvalidArgument, "--max-batch-tokens must be >= 1");
    return options;
}

std::string kv_cache_dtype_in_effect(const EngineOptions& options) {
    if (!options.kv_cache_dtype.empty() && options.kv_cache_dtype != "auto") return options.kv_cache_dtype;
    if (options.device == "cpu")
        for (const ComputeType& t : cpu_compute_types())
            if (t.name == options.dtype) return t.kv_cache;
    return options.dtype;
}

std::unique_ptr<Engine> create_engine_with_adapters(const Args& args, const EngineOptions& options) {
    const std::string profile_path = args.get_or("profile", "");
    if (!profile_path.empty() && !KernelProfile::available())
        throw Error(ErrorKind::Unsupported, "--profile needs a LibTorch 2.x build (Kineto profiler); this one has none");
    std::unique_ptr<Engine> engine = Engine::create(options);
    for (const auto& spec : args.all("adapter")) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            throw Error(ErrorKind::InvalidArgument, "--adapter expects NAME=DIR, got '" + spec + "'");
        engine->load_adapter(spec.substr(0, eq), spec.substr(eq + 1));
    }
    if (profile_path.empty()) return engine;
    auto profiled = std::make_unique<ProfiledEngine>(std::move(engine), profile_path);
    profiled->start();
    return profiled;
}

}  // namespace lorascope::cli
