// The request-latency part of serve's /metrics (issue 33): end-to-end latency (arrival at the
// engine to the last token, the engine's Usage::total_ms) and time to first token (the engine's
// Usage::time_to_first_token_ms), each as a histogram (its _sum over _count is the mean) and as
// p50/p95/p99 over the latest requests, and goodput (requests finished within the --goodput-ttft-ms and
// --goodput-tpot-ms targets), each by the definitions `lorascope-cli bench` reports
// (lorascope/bench_report.h: RequestTiming, percentile). Not thread-safe: Metrics holds its lock.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/bench_report.h"
#include "lorascope/engine.h"

namespace lorascope::serve {

class Histogram;

class LatencyMetrics {
public:
    // The percentiles are over the latest `window` finished requests: a scrape sorts at most that
    // many values, however long the server has run.
    static constexpr size_t kWindow = 1024;
    explicit LatencyMetrics(LatencyTargets goodput);

    // A served request's latencies in seconds, for the histograms Metrics keeps.
    struct Served {
        double e2e_s = 0, ttft_s = 0;
    };
    // Every finish the engine reports; returns a served request's latencies, none for a failed or
    // cancelled one, which counts against the goodput ratio and nowhere else.
    std::optional<Served> on_finished(const FinishEvent& finish);
    // Appends the metrics; `e2e` and `ttft` are the histograms it fed (seconds, serve's duration buckets).
    void render(std::string& out, const Histogram& e2e, const Histogram& ttft) const;
    // The finished request's timing as bench records one (submitted at 0 ms).
    static RequestTiming timing_of(const FinishEvent& finish);

private:
    LatencyTargets goodput_;
    uint64_t finished_ = 0, good_ = 0;
    std::deque<double> recent_e2e_ms_, recent_ttft_ms_;
};

}  // namespace lorascope::serve
