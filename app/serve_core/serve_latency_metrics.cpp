#include "serve_latency_metrics.h"

#include "serve_metrics.h"

namespace lorascope::serve {

LatencyMetrics::LatencyMetrics(LatencyTargets goodput) : goodput_(goodput) {}

RequestTiming LatencyMetrics::timing_of(const FinishEvent& e) {
    RequestTiming t;
    t.submitted_ms = 0;
    t.tokens = e.usage.generated_tokens;
    if (t.tokens > 0) {
        t.first_token_ms = e.usage.time_to_first_token_ms;
        // The engine finishes a request in the step that produced its last token.
        t.last_token_ms = e.usage.total_ms;
    }
    t.finished = true;
    t.finished_ms = e.usage.total_ms;
    t.reason = e.reason;
    t.error = e.error;
    t.queue_ms = e.usage.queue_ms;
    return t;
}

namespace {

void keep_recent(std::deque<double>& recent, double ms) {
    recent.push_back(ms);
    if (recent.size() > LatencyMetrics::kWindow) recent.pop_front();
}

// A histogram and its percentiles over the latest requests, as bench computes them.
void render_latency(std::string& out, const std::string& name, const char* help, const Histogram& histogram,
                    const std::deque<double>& recent_ms) {
    prometheus_header(out, name, "histogram", help);
    histogram.render(out, name, "");
    const std::string recent_name = name + "_recent";
    prometheus_header(out, recent_name, "gauge", "Seconds at a percentile of the latest requests (at most 1024), as bench computes it");
    const std::vector<double> recent(recent_ms.begin(), recent_ms.end());
    for (const auto& [label, p] : {std::pair<const char*, double>{"p50", 50}, {"p95", 95}, {"p99", 99}})
        prometheus_sample(out, recent_name, std::string("percentile=\"") + label + "\"", percentile(recent, p) / 1000.0);
}

}  // namespace

std::optional<LatencyMetrics::Served> LatencyMetrics::on_finished(const FinishEvent& e) {
    ++finished_;
    const RequestTiming t = timing_of(e);
    // A request its client abandoned was not served, however fast its tokens came.
    const bool served = e.reason != FinishReason::Error && e.reason != FinishReason::Cancelled && t.tokens > 0;
    good_ += served && t.good(goodput_);
    if (!served) return std::nullopt;
    keep_recent(recent_e2e_ms_, t.e2e_ms());
    keep_recent(recent_ttft_ms_, t.ttft_ms());
    return Served{t.e2e_ms() / 1000.0, t.ttft_ms() / 1000.0};
}

void LatencyMetrics::render(std::string& out, const Histogram& e2e, const Histogram& ttft) const {
    render_latency(out, "lorascope_request_e2e_duration", "Seconds from a request's arrival at the engine to its last token",
                   e2e, recent_e2e_ms_);
    render_latency(out, "lorascope_request_ttft_duration", "Seconds from a request's arrival at the engine to its first token",
                   ttft, recent_ttft_ms_);
    prometheus_header(out, "lorascope_goodput_target_seconds", "gauge",
                      "What goodput counts as good: --goodput-ttft-ms and --goodput-tpot-ms in seconds (0: no bound)");
    prometheus_sample(out, "lorascope_goodput_target_seconds", "slo=\"ttft\"", goodput_.ttft_ms / 1000.0);
    prometheus_sample(out, "lorascope_goodput_target_seconds", "slo=\"tpot\"", goodput_.tpot_ms / 1000.0);
    prometheus_header(out, "lorascope_goodput_requests", "counter",
                      "Requests that finished without error within both goodput targets");
    prometheus_sample(out, "lorascope_goodput_requests", "", static_cast<double>(good_));
    prometheus_header(out, "lorascope_goodput_ratio", "gauge",
                      "Goodput requests over every request the engine finished (failed and cancelled ones included)");
    prometheus_sample(out, "lorascope_goodput_ratio", "",
                      finished_ ? static_cast<double>(good_) / static_cast<double>(finished_) : 0.0);
}

}  // namespace lorascope::serve
