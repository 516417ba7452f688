// The figures of a workload run: throughput, latency, batching and cache. One definition for
// `lorascope-cli bench` and the window's batching lab, fed the same events (StepStats, and each
// request's submit, tokens and finish). Torch-free (lorascope_core).
//
// Definitions:
//   tokens_per_s      generated tokens / wall seconds (first submit to last finish)
//   ttft_ms           submit -> first token, per request that produced one (mean, p50, p95). The mean
//                     beside the median: when a burst of twice the batch arrives at once, the p50 is
//                     the midpoint between the first wave's last first token and the next one's first,
//                     and an order can move it while every other request waits longer
//   per_token_ms      gaps between a request's consecutive tokens, all requests pooled (p50, p95)
//   mean_batch_rows   rows per published step, averaged over steps
//   padding_share     padded positions / (prefill + decode + padded positions), over all steps
//   peak_kv_bytes     the largest kv_bytes_allocated of any step
//   e2e_ms            submit -> last token, per request that produced one (mean, p50, p95, p99): what a
//                     user who waits for the whole answer feels
//   queue_ms          submit -> admitted into the batch (the engine's Usage::queue_ms), per request
//                     that finished (p50, p95, p99)
//   tpot_ms           one request's time per output token after its first: (last - first token) /
//                     (tokens - 1); 0 for a request of one token
//   goodput           requests that finished without error with ttft_ms <= the TTFT target and
//                     tpot_ms <= the per-token target (LatencyTargets; 0 bounds nothing), counted,
//                     as a share of all requests and per wall second
//   rows_while_queued rows that decoded a token per step, averaged over the steps after which
//                     requests were still waiting in the queue (the batch was full)
//   steps_by_threads  steps per compute thread count (EngineOptions::adaptive_threads), ascending
// Percentiles interpolate linearly between the two nearest ranks.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope {

double percentile(std::vector<double> values, double p);

// What goodput counts as good (lorascope-cli bench --goodput-ttft-ms / --goodput-tpot-ms).
struct LatencyTargets {
    double ttft_ms = 0;   // 0: any time to first token
    double tpot_ms = 0;   // 0: any time per output token
};

struct BenchFigures {
    int64_t requests = 0, finished = 0, failed_requests = 0;
    int64_t generated_tokens = 0;
    double wall_s = 0, tokens_per_s = 0;
    double ttft_mean_ms = 0, ttft_p50_ms = 0, ttft_p95_ms = 0;
    double per_token_p50_ms = 0, per_token_p95_ms = 0;
    double e2e_mean_ms = 0, e2e_p50_ms = 0, e2e_p95_ms = 0, e2e_p99_ms = 0;
    double queue_p50_ms = 0, queue_p95_ms = 0, queue_p99_ms = 0;
    LatencyTargets goodput_targets;        // what the goodput figures were counted against
    int64_t goodput_requests = 0;
    double goodput_share = 0, goodput_per_s = 0;
    int64_t steps = 0;
    double mean_batch_rows = 0, padding_share = 0;
    int64_t steps_while_queued = 0;
    double rows_while_queued = 0;
    int64_t peak_kv_bytes = 0;
    // Cache maintenance: what joins, leaves and beam reorders copied, against what newcomers'
    // prompts wrote into their own blocks.
    int64_t kv_blocks_total = 0, cache_bytes_moved = 0, most_cache_bytes_moved_in_a_step = 0, cache_bytes_prefilled = 0;
    int64_t steps_with_deferred_prefill = 0;
    // Where the engine's time goes: steps that prefilled newcomers against decode-only steps.
    int64_t prefill_steps = 0;
    double prefill_step_ms = 0, decode_step_ms = 0;
    std::map<int, int64_t> steps_by_threads;
    std::string first_error;
};

// One request as the recorder saw it (times in ms from the recorder's start).
struct RequestTiming {
    double submitted_ms = 0, first_token_ms = -1, last_token_ms = -1, finished_ms = -1;
    int64_t tokens = 0;
    std::vector<double> gaps_ms;   // between consecutive tokens
    bool finished = false;
    FinishReason reason = FinishReason::Eos;
    std::string error;
    double queue_ms = -1;          // the engine's Usage::queue_ms; -1 until finished

    // The definitions above; meaningful when tokens > 0.
    double ttft_ms() const { return first_token_ms - submitted_ms; }
    double e2e_ms() const { return last_token_ms - submitted_ms; }
    double tpot_ms() const { return tokens > 1 ? (last_token_ms - first_token_ms) / static_cast<double>(tokens - 1) : 0.0; }
    // Finished without error and within both targets.
    bool good(const LatencyTargets& targets) const;
};

// Thread-safe: steps and request events arrive on the engine thread, figures are read anywhere.
class BenchRecorder {
public:
    using Clock = std::chrono::steady_clock;
    BenchRecorder() : start_(Clock::now()) {}

    void restart_clock() { start_ = Clock::now(); }
    double now_ms() const;   // since the start
    // `at_ms`: taken (now_ms()) before Engine::submit, which may deliver tokens before it returns.
    void submitted(RequestId id, double at_ms);
    // Token and finish times are taken when the calls are made.
    void token(RequestId id);
    void finished(const FinishEvent& event);
    void step(const StepStats& stats);

    // The figures so far; wall time ends at the last finish (or now, while requests run).
    BenchFigures figures(const LatencyTargets& goodput_targets = {}) const;
    std::vector<StepStats> steps() const;
    std::map<RequestId, RequestTiming> timings() const;
    std::vector<double> ttft_ms() const;        // per request with a first token
    std::vector<double> per_token_ms() const;   // every gap, pooled
    size_t finished_count() const;

private:
    mutable std::mutex mutex_;
    Clock::time_point start_;
    std::map<RequestId, RequestTiming> timings_;
    std::vector<StepStats> steps_;
    double last_finish_ms_ = 0;
    size_t finished_ = 0;
};

// The figures from a step stream and request timings (what BenchRecorder::figures computes).
BenchFigures compute_figures(const std::vector<StepStats>& steps, const std::map<RequestId, RequestTiming>& timings,
                             double wall_s, const LatencyTargets& goodput_targets = {});

// The steps as CSV, one line per step, header first: the bench's --steps-csv and the lab's
// export. Rows hold the engine's request ids of each row, ";"-separated. wall_ms and prefill_ms
// (columns 2 and 3) are the only times in it.
void write_steps_csv(std::ostream& out, const std::vector<StepStats>& steps);

// The requests as CSV, one line per request in id order, header first: the bench's
// --requests-csv. Columns: id, tokens, reason, then submitted_ms, queue_ms, ttft_ms, tpot_ms and
// e2e_ms as defined above (empty where the request produced no token), full precision, so that
// the report's percentiles and goodput can be recomputed from it.
void write_requests_csv(std::ostream& out, const std::map<RequestId, RequestTiming>& timings);

}  // namespace lorascope
