// lorascope-cli bench: drives the engine with a workload file and reports throughput, latency,
// batching and memory figures as JSON. Timings are measured, never asserted: comparisons belong
// in scripts that run peers in the same session.
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "args.h"
#include "commands.h"
#include "engine_options.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "lorascope/params.h"
#include "lorascope/runtime.h"
#include "workload.h"

namespace lorascope::cli {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

const char* const kUsage =
    "usage: lorascope-cli bench --model DIR --workload FILE [--report FILE|-] [--static]\n"
    "                           [engine options: --threads N --device D --dtype T --max-batch-size N\n"
    "                            --max-batch-tokens N --kv-cache-mb MIB --prefill-budget TOKENS\n"
    "                            --adapter NAME=DIR ...]\n"
    "  workload: {\"name\", \"requests\": [{\"prompt\"|\"input_ids\", \"adapter\", \"params\"}...]\n"
    "             or \"synthetic\": {\"count\", \"prompt_tokens\": [min, max], \"seed\", \"min_id\"},\n"
    "             \"params\": {...defaults for every request...}, \"adapters\": [names, round robin],\n"
    "             \"arrival\": {\"kind\": \"all\"} | {\"kind\": \"poisson\", \"rate\": per_second, \"seed\"}}\n";

struct Timeline {
    Clock::time_point submitted, first, last;
    int64_t tokens = 0;
    std::vector<double> gaps_ms;
    bool finished = false;
    std::string error;
};

class BenchSink : public RequestSink {
public:
    // Submits under the sink's lock so that the submit time is recorded before any event for
    // the new id can arrive from the engine thread.
    RequestId submit(Engine& engine, const Request& request, const std::shared_ptr<BenchSink>& self) {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto submitted = Clock::now();
        const RequestId id = engine.submit(request, self);
        timelines_[id].submitted = submitted;
        return id;
    }
    void on_token(const TokenEvent& e) override {
        const auto now = Clock::now();
        std::lock_guard<std::mutex> lock(mutex_);
        auto& t = timelines_[e.id];
        if (t.tokens == 0) {
            t.first = now;
        } else {
            t.gaps_ms.push_back(std::chrono::duration<double, std::milli>(now - t.last).count());
        }
        t.last = now;
        ++t.tokens;
    }
    void on_finish(const FinishEvent& e) override {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& t = timelines_[e.id];
        t.finished = true;
        t.error = e.error;
        ++finished_;
        done_.notify_all();
    }
    void wait(size_t count) {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return finished_ >= count; });
    }
    std::map<RequestId, Timeline> timelines() {
        std::lock_guard<std::mutex> lock(mutex_);
        return timelines_;
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::map<RequestId, Timeline> timelines_;
    size_t finished_ = 0;
};

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(rank);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

// The process's own high-water RSS. VmHWM belongs to this address space; getrusage's ru_maxrss
// survives execve, so under a large parent (a Python harness that imported torch) it reports the
// parent's peak instead of ours. ru_maxrss remains the fallback where /proc is absent.
int64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  123 kB"
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    Args args(argc, argv, 2, {"help", "static"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::vector<std::string> known = {"help", "static", "workload", "report"};
    for (const auto& k : engine_option_names()) known.push_back(k);
    args.allow_only(known);

    const std::string workload_path = args.require("workload");
    const Workload workload = read_workload(workload_path);

    EngineOptions options = engine_options_from(args);
    options.static_batching = args.has("static");
    const auto load_start = std::chrono::steady_clock::now();
    auto engine = create_engine_with_adapters(args, options);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    const std::vector<Request> requests = workload_requests(workload, engine->model_config().vocab_size());

    // Statistics arrive on the engine thread.
    std::mutex stats_mutex;
    int64_t steps = 0, row_sum = 0, padded = 0, computed = 0, peak_kv = 0;
    // Cache maintenance: what joins, leaves and beam reorders copied, against what newcomers'
    // prompts wrote into their own blocks.
    int64_t bytes_moved = 0, most_moved = 0, bytes_prefilled = 0, kv_blocks_total = 0, deferred_steps = 0;
    // Where the engine's time goes: steps that prefilled newcomers against decode-only steps.
    int64_t prefill_steps = 0;
    double prefill_step_ms = 0, decode_step_ms = 0;
    engine->set_stats_listener([&](const StepStats& s) {
        std::lock_guard<std::mutex> lock(stats_mutex);
        ++steps;
        row_sum += s.rows;
        padded += s.padded_tokens;
        computed += s.prefill_tokens + s.decode_tokens + s.padded_tokens;
        peak_kv = std::max(peak_kv, s.kv_bytes_allocated);
        bytes_moved += s.cache_bytes_moved;
        most_moved = std::max(most_moved, s.cache_bytes_moved);
        bytes_prefilled += s.cache_bytes_prefilled;
        kv_blocks_total = s.kv_blocks_total;
        deferred_steps += s.prefill_tokens_deferred > 0;
        if (s.prefill_tokens > 0) {
            ++prefill_steps;
            prefill_step_ms += s.wall_ms;
        } else {
            decode_step_ms += s.wall_ms;
        }
    });

    std::mt19937_64 rng(workload.seed);
    std::exponential_distribution<double> gap(workload.rate);

    auto sink = std::make_shared<BenchSink>();
    const auto start = Clock::now();
    auto next = start;
    for (const auto& r : requests) {
        if (workload.poisson) {
            next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
            std::this_thread::sleep_until(next);
        }
        sink->submit(*engine, r, sink);
    }
    sink->wait(requests.size());
    const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    engine->set_stats_listener(nullptr);

    std::vector<double> ttft, per_token;
    int64_t generated = 0, failed = 0;
    std::string first_error;
    for (const auto& [id, t] : sink->timelines()) {
        generated += t.tokens;
        if (!t.error.empty()) {
            ++failed;
            if (first_error.empty()) first_error = t.error;
        }
        if (t.tokens > 0) ttft.push_back(std::chrono::duration<double, std::milli>(t.first - t.submitted).count());
        per_token.insert(per_token.end(), t.gaps_ms.begin(), t.gaps_ms.end());
    }

    json report = {
        {"workload", workload.name},
        {"model", options.model_dir},
        {"batching", options.static_batching ? "static" : "continuous"},
        {"threads", options.threads},
        {"cpu_gemm", runtime_info().cpu_gemm},
        {"dtype", options.dtype},
        {"load_s", load_s},  // model and adapters, before the first request
        {"max_batch_size", options.max_batch_size},
        {"max_batch_tokens", options.max_batch_tokens},
        {"arrival", workload.arrival},
        {"requests", requests.size()},
        {"failed_requests", failed},
        {"generated_tokens", generated},
        {"wall_s", wall_s},
        {"tokens_per_s", wall_s > 0 ? static_cast<double>(generated) / wall_s : 0.0},
        {"ttft_ms", {{"p50", percentile(ttft, 50)}, {"p95", percentile(ttft, 95)}}},
        {"per_token_ms", {{"p50", percentile(per_token, 50)}, {"p95", percentile(per_token, 95)}}},
        {"steps", steps},
        {"mean_batch_rows", steps ? static_cast<double>(row_sum) / static_cast<double>(steps) : 0.0},
        {"padding_share", computed ? static_cast<double>(padded) / static_cast<double>(computed) : 0.0},
        {"peak_kv_bytes", peak_kv},
        {"kv_cache",
         {{"blocks", kv_blocks_total},
          {"bytes_moved", bytes_moved},
          {"most_bytes_moved_in_a_step", most_moved},
          {"bytes_prefilled", bytes_prefilled}}},
        {"prefill_budget_tokens", options.prefill_budget_tokens},
        {"steps_with_deferred_prefill", deferred_steps},
        {"step_ms",
         {{"with_prefill", {{"steps", prefill_steps}, {"total", prefill_step_ms}}},
          {"decode_only", {{"steps", steps - prefill_steps}, {"total", decode_step_ms}}}}},
        {"peak_rss_bytes", peak_rss_bytes()},
    };
    if (!first_error.empty()) report["first_error"] = first_error;

    const std::string out = args.get_or("report", "-");
    if (out == "-") {
        std::printf("%s\n", report.dump(2).c_str());
    } else {
        std::ofstream file(out);
        if (!file) throw Error(ErrorKind::NotFound, out, "cannot write the report");
        file << report.dump(2) << "\n";
    }
    return 0;
}

}  // namespace lorascope::cli
