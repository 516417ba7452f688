// lorascope-cli bench: drives the engine with a workload file and reports throughput, latency,
// batching and memory figures as JSON. Timings are measured, never asserted: comparisons belong
// in scripts that run peers in the same session.
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "args.h"
#include "commands.h"
#include "demo_option.h"
#include "engine_options.h"
#include "lorascope/bench_report.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "lorascope/runtime.h"
#include "lorascope/workload.h"
#include "lorascope/workload_run.h"

namespace lorascope::cli {

namespace {

using nlohmann::json;

const char* const kUsage =
    "usage: lorascope-cli bench --model DIR|--demo [--demo-model KEY] [--demo-dir DIR] --workload FILE [--report FILE|-]\n"
    "                           [--steps-csv FILE] [--requests-csv FILE] [--static]\n"
    "                           [--goodput-ttft-ms MS] [--goodput-tpot-ms MS]\n"
    "                           [engine options: --threads N --thread-policy adaptive|fixed --device D\n"
    "                            --dtype T --kv-cache-dtype T --max-batch-size N --max-batch-tokens N --kv-cache-mb MIB\n"
    "                            --batching continuous|static --prefill-budget TOKENS | --tpot-target-ms MS\n"
    "                            --tpot-tail-share S --prefill-chunk TOKENS --queue-order arrival|pack\n"
    "                            --adapter NAME=DIR ... --adapter-memory-budget BYTES --profile FILE]\n"
    "                           (each as lorascope-cli generate --help describes it)\n"
    "  workload: {\"name\", \"requests\": [{\"prompt\"|\"input_ids\", \"adapter\", \"params\"}...]\n"
    "             or \"synthetic\": {\"count\", \"prompt_tokens\": [min, max], \"max_new_tokens\": [min, max],\n"
    "                            \"seed\", \"min_id\"},\n"
    "             \"params\": {...defaults for every request...}, \"params_mix\": [{...}, ...round robin],\n"
    "             \"adapters\": [names, round robin; \"\" = base],\n"
    "             \"arrival\": {\"kind\": \"all\"} | {\"kind\": \"poisson\", \"rate\": per_second, \"seed\"}\n"
    "                      | {\"kind\": \"bursts\", \"size\": N, \"interval_s\": S}}\n"
    "  requests due at time 0 are submitted while the engine is held, so that they start together.\n"
    "  --steps-csv FILE: one line per engine step (rows, tokens, padding, KV, queue, request ids, and\n"
    "                    why it prefilled what it did: row_limit, prefill_margin, bulk_prefill,\n"
    "                    row_plan_ms).\n"
    "  --requests-csv FILE: one line per request (tokens, finish reason, submit time, queue, TTFT, time per\n"
    "                       output token, end-to-end), the records behind the report's latency figures.\n"
    "  --goodput-ttft-ms / --goodput-tpot-ms: goodput counts the requests that finished within both (0 or\n"
    "                       absent: no bound; the per-token one defaults to --tpot-target-ms).\n"
    "  --static: --batching static.\n";

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

namespace {

// The report's context: what was run, on what, how.
json run_context(const Workload& workload, const EngineOptions& options, size_t request_count, double load_s) {
    return {
        {"workload", workload.name},
        {"model", options.model_dir},
        {"batching", options.static_batching ? "static" : "continuous"},
        {"queue_order", options.queue_order == QueueOrder::Pack ? "pack" : "arrival"},
        {"threads", options.threads},
        {"thread_policy", options.adaptive_threads ? "adaptive" : "fixed"},
        {"cpu_gemm", runtime_info().cpu_gemm},
        {"cpu_isa", runtime_info().cpu_isa},
        {"dtype", options.dtype},
        {"kv_cache_dtype", kv_cache_dtype_in_effect(options)},  // what "auto" chose
        {"load_s", load_s},  // model and adapters, before the first request
        {"max_batch_size", options.max_batch_size},
        {"max_batch_tokens", options.max_batch_tokens},
        {"arrival", json::parse(arrival_to_json(workload.arrival))},
        {"requests", request_count},
        {"prefill_budget", options.prefill_budget_tokens == kPrefillBudgetInTime ? json("time")
                                                                                  : json(options.prefill_budget_tokens)},
        {"tpot_target_ms", options.tpot_target_ms},
        {"tpot_tail_share", options.tpot_target_ms > 0 ? options.tpot_tail_share : 0.0},
    };
}

// The run's figures (lorascope/bench_report.h), added to `report`.
void add_figures(json& report, const BenchFigures& f) {
    report.update({
        {"failed_requests", f.failed_requests},
        {"generated_tokens", f.generated_tokens},
        {"wall_s", f.wall_s},
        {"tokens_per_s", f.tokens_per_s},
        {"ttft_ms", {{"mean", f.ttft_mean_ms}, {"p50", f.ttft_p50_ms}, {"p95", f.ttft_p95_ms}}},
        {"per_token_ms", {{"p50", f.per_token_p50_ms}, {"p95", f.per_token_p95_ms}}},
        {"e2e_ms", {{"mean", f.e2e_mean_ms}, {"p50", f.e2e_p50_ms}, {"p95", f.e2e_p95_ms}, {"p99", f.e2e_p99_ms}}},
        {"queue_ms", {{"p50", f.queue_p50_ms}, {"p95", f.queue_p95_ms}, {"p99", f.queue_p99_ms}}},
        {"goodput",
         {{"ttft_target_ms", f.goodput_targets.ttft_ms},
          {"tpot_target_ms", f.goodput_targets.tpot_ms},
          {"requests", f.goodput_requests},
          {"share", f.goodput_share},
          {"per_s", f.goodput_per_s}}},
        {"steps", f.steps},
        {"mean_batch_rows", f.mean_batch_rows},
        {"rows_while_queued", {{"steps", f.steps_while_queued}, {"mean_decoding_rows", f.rows_while_queued}}},
        {"padding_share", f.padding_share},
        {"peak_kv_bytes", f.peak_kv_bytes},
        {"kv_cache",
         {{"blocks", f.kv_blocks_total},
          {"bytes_moved", f.cache_bytes_moved},
          {"most_bytes_moved_in_a_step", f.most_cache_bytes_moved_in_a_step},
          {"bytes_prefilled", f.cache_bytes_prefilled}}},
        {"steps_with_deferred_prefill", f.steps_with_deferred_prefill},
        {"step_ms",
         {{"with_prefill", {{"steps", f.prefill_steps}, {"total", f.prefill_step_ms}}},
          {"decode_only", {{"steps", f.steps - f.prefill_steps}, {"total", f.decode_step_ms}}}}},
        {"peak_rss_bytes", peak_rss_bytes()},
    });
    json by_threads = json::object();
    for (const auto& [threads, steps] : f.steps_by_threads) by_threads[std::to_string(threads)] = steps;
    report["steps_by_threads"] = by_threads;
    if (!f.first_error.empty()) report["first_error"] = f.first_error;
}

void write_csv(const Args& args, const std::string& option, const std::function<void(std::ostream&)>& write) {
    if (!args.has(option)) return;
    const std::string path = args.get_or(option, "");
    std::ofstream csv(path);
    if (!csv) throw Error(ErrorKind::NotFound, path, "cannot write the --" + option + " file");
    write(csv);
}

void write_outputs(const Args& args, const json& report, const BenchRecorder& recorder) {
    write_csv(args, "steps-csv", [&](std::ostream& out) { write_steps_csv(out, recorder.steps()); });
    write_csv(args, "requests-csv", [&](std::ostream& out) { write_requests_csv(out, recorder.timings()); });
    const std::string out = args.get_or("report", "-");
    if (out == "-") {
        std::printf("%s\n", report.dump(2).c_str());
    } else {
        std::ofstream file(out);
        if (!file) throw Error(ErrorKind::NotFound, out, "cannot write the report");
        file << report.dump(2) << "\n";
    }
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    // --demo: the demo pack's model and all its adapters, as in generate (the window's lab runs there).
    ExpandedArgs expanded = expand_demo_args(argc, argv);
    Args args(expanded.argc(), expanded.argv.data(), 2, {"help", "static", "demo"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::vector<std::string> known = {"help", "static", "workload", "report", "steps-csv", "requests-csv", "demo",
                                      "goodput-ttft-ms", "goodput-tpot-ms"};
    for (const auto& k : engine_option_names()) known.push_back(k);
    for (const auto& k : demo_option_names()) known.push_back(k);
    args.allow_only(known);

    const std::string workload_path = args.require("workload");
    const Workload workload = read_workload(workload_path);

    EngineOptions options = engine_options_from(args);
    options.static_batching = options.static_batching || args.has("static");
    LatencyTargets goodput;
    goodput.ttft_ms = args.get_double("goodput-ttft-ms", 0);
    goodput.tpot_ms = args.get_double("goodput-tpot-ms", options.tpot_target_ms);
    if (goodput.ttft_ms < 0 || goodput.tpot_ms < 0)
        throw Error(ErrorKind::InvalidArgument, "--goodput-ttft-ms and --goodput-tpot-ms must be >= 0 (ms; 0 = no bound)");
    const auto load_start = std::chrono::steady_clock::now();
    auto engine = create_engine_with_adapters(args, options);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    std::vector<Request> requests = workload_requests(workload, engine->model_config().vocab_size());
    const size_t request_count = requests.size();

    // Submission at the arrival times, the recording and the figures are the engine library's
    // (lorascope/workload_run.h, bench_report.h), shared with the window's batching lab.
    WorkloadRun run(*engine, std::move(requests), arrival_times_s(workload.arrival, request_count));
    run.start();
    run.wait();
    json report = run_context(workload, options, request_count, load_s);
    add_figures(report, run.figures(goodput));
    write_outputs(args, report, run.recorder());
    return 0;
}

}  // namespace lorascope::cli
