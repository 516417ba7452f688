// /metrics of `lorascope-cli serve`: Prometheus text with LoRAX's metric names where they mean the
// same thing (docs/reference/metrics.md and router/src/{server,infer,scheduler}.rs of predibase/lorax),
// fed from the engine's StepStats and from each request's own timings, plus lorascope_* series
// for what LoRAX has no name for (cancellations on disconnect, refused and closed connections).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lorascope/bench_report.h"
#include "lorascope/engine.h"
#include "serve_latency_metrics.h"

namespace lorascope::serve {

class Histogram {
public:
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double value);
    void render(std::string& out, const std::string& name, const std::string& labels) const;

private:
    std::vector<double> bounds_;
    std::vector<uint64_t> counts_;   // per bucket, not cumulative
    uint64_t count_ = 0;
    double sum_ = 0;
};

// Prometheus text: a metric's HELP and TYPE lines, and one sample ("name{labels} value").
void prometheus_header(std::string& out, const std::string& name, const char* type, const char* help);
void prometheus_sample(std::string& out, const std::string& name, const std::string& labels, double value);

class Metrics {
public:
    // `goodput`: what lorascope_goodput_* counts as good (serve's --goodput-ttft-ms / --goodput-tpot-ms).
    explicit Metrics(LatencyTargets goodput = {});

    // The engine thread, after every step.
    void on_step(const StepStats& stats);
    // HTTP threads.
    void on_request_received();                       // lorax_request_count
    void on_request_refused(const std::string& err);  // lorax_request_failure{err}, before the engine
    void on_submitted();
    void on_finished(const FinishEvent& finish, double validation_s, double total_s);
    void on_client_disconnect();                      // a request whose client went away before its answer
    void on_connection_refused();                     // answered 429 past --max-connections
    void set_connections(int64_t active);             // serving a request now
    void set_open_connections(int64_t open);          // sockets held, idle and slow ones included
    // A connection the server closed on its own; `why` is one of a fixed few words ("timeout",
    // "evicted", "header_too_large", "slow_reader"), never client text.
    void on_connection_closed(const std::string& why);

    int64_t requests_in_engine() const;               // submitted and not yet finished
    std::string render() const;

private:
    mutable std::mutex mutex_;
    uint64_t request_count_ = 0, request_success_ = 0;
    std::map<std::string, uint64_t> request_failure_;
    uint64_t disconnect_cancels_ = 0, connections_refused_ = 0;
    int64_t connections_ = 0, open_connections_ = 0;
    std::map<std::string, uint64_t> closed_;
    int64_t in_engine_ = 0;
    StepStats last_step_;
    uint64_t steps_prefill_ = 0, steps_decode_ = 0;
    Histogram request_duration_, request_validation_, request_queue_, request_inference_, request_per_token_,
        request_generated_, request_input_length_, batch_prefill_, batch_decode_, request_e2e_, request_ttft_;
    LatencyMetrics latency_;
};

}  // namespace lorascope::serve
