#include "serve_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lorascope::serve {

namespace {

// LoRAX's duration buckets: 35 steps of a geometric series from 0.00015 s (server.rs).
std::vector<double> duration_buckets() {
    std::vector<double> b;
    double value = 0.0001;
    for (int i = 0; i < 35; ++i) b.push_back(value *= 1.5);
    return b;
}

std::vector<double> count_buckets() {
    std::vector<double> b;
    for (double v = 1; v <= 65536; v *= 2) b.push_back(v);
    return b;
}

std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
    out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(value) + "\n";
}

// A metric of one sample.
void single(std::string& out, const char* name, const char* type, const char* help, double value) {
    header(out, name, type, help);
    sample(out, name, "", value);
}

// A counter with one sample per cause, labelled `label`.
void by_cause(std::string& out, const char* name, const char* help, const char* label,
              const std::map<std::string, uint64_t>& counts) {
    header(out, name, "counter", help);
    for (const auto& [cause, n] : counts)
        sample(out, name, std::string(label) + "=\"" + cause + "\"", static_cast<double>(n));
}

}  // namespace

void prometheus_header(std::string& out, const std::string& name, const char* type, const char* help) {
    header(out, name, type, help);
}

void prometheus_sample(std::string& out, const std::string& name, const std::string& labels, double value) {
    sample(out, name, labels, value);
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
    if (!std::isfinite(value)) return;
    size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    ++counts_[i];
    ++count_;
    sum_ += value;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
    const std::string sep = labels.empty() ? "" : labels + ",";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        sample(out, name + "_bucket", sep + "le=\"" + number(bounds_[i]) + "\"", static_cast<double>(cumulative));
    }
    sample(out, name + "_bucket", sep + "le=\"+Inf\"", static_cast<double>(count_));
    sample(out, name + "_sum", labels, sum_);
    sample(out, name + "_count", labels, static_cast<double>(count_));
}

Metrics::Metrics(LatencyTargets goodput)
    : request_duration_(duration_buckets()), request_validation_(duration_buckets()),
      request_queue_(duration_buckets()), request_inference_(duration_buckets()),
      request_per_token_(duration_buckets()), request_generated_(count_buckets()),
      request_input_length_(count_buckets()), batch_prefill_(duration_buckets()), batch_decode_(duration_buckets()),
      request_e2e_(duration_buckets()), request_ttft_(duration_buckets()), latency_(goodput) {}

void Metrics::on_step(const StepStats& stats) {
    std::lock_guard<std::mutex> lock(mutex_);
    last_step_ = stats;
    if (stats.prefill_tokens > 0) {
        ++steps_prefill_;
        batch_prefill_.observe(stats.wall_ms / 1000.0);
    } else {
        ++steps_decode_;
        batch_decode_.observe(stats.wall_ms / 1000.0);
    }
}

void Metrics::on_request_received() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++request_count_;
}

void Metrics::on_request_refused(const std::string& err) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++request_failure_[err];
}

void Metrics::on_submitted() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_engine_;
}

void Metrics::on_finished(const FinishEvent& e, double validation_s, double total_s) {
    std::lock_guard<std::mutex> lock(mutex_);
    --in_engine_;
    if (const auto served = latency_.on_finished(e)) {
        request_e2e_.observe(served->e2e_s);
        request_ttft_.observe(served->ttft_s);
    }
    if (e.reason == FinishReason::Error) {
        ++request_failure_["generation"];
        return;
    }
    if (e.reason == FinishReason::Cancelled) {
        ++request_failure_["cancelled"];
        return;
    }
    ++request_success_;
    const double queue_s = e.usage.queue_ms / 1000.0;
    const double inference_s = std::max(0.0, (e.usage.total_ms - e.usage.queue_ms) / 1000.0);
    request_duration_.observe(total_s);
    request_validation_.observe(validation_s);
    request_queue_.observe(queue_s);
    request_inference_.observe(inference_s);
    if (e.usage.generated_tokens > 0)
        request_per_token_.observe(inference_s / static_cast<double>(e.usage.generated_tokens));
    request_generated_.observe(static_cast<double>(e.usage.generated_tokens));
    request_input_length_.observe(static_cast<double>(e.usage.prompt_tokens));
}

void Metrics::on_client_disconnect() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++disconnect_cancels_;
}

void Metrics::on_connection_refused() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++connections_refused_;
}

void Metrics::set_connections(int64_t active) {
    std::lock_guard<std::mutex> lock(mutex_);
    connections_ = active;
}

void Metrics::set_open_connections(int64_t open) {
    std::lock_guard<std::mutex> lock(mutex_);
    open_connections_ = open;
}

void Metrics::on_connection_closed(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++closed_[why];
}

int64_t Metrics::requests_in_engine() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_engine_;
}

std::string Metrics::render() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    single(out, "lorax_request_count", "counter", "Requests received", static_cast<double>(request_count_));
    single(out, "lorax_request_success", "counter", "Requests that finished with generated text",
           static_cast<double>(request_success_));
    by_cause(out, "lorax_request_failure", "Requests that failed, by cause", "err", request_failure_);

    const std::pair<const char*, const Histogram*> histograms[] = {
        {"lorax_request_duration", &request_duration_},
        {"lorax_request_validation_duration", &request_validation_},
        {"lorax_request_queue_duration", &request_queue_},
        {"lorax_request_inference_duration", &request_inference_},
        {"lorax_request_mean_time_per_token_duration", &request_per_token_},
        {"lorax_request_generated_tokens", &request_generated_},
        {"lorax_request_input_length", &request_input_length_}};
    for (const auto& [name, h] : histograms) {
        header(out, name, "histogram", "Per-request measurement (seconds or tokens)");
        h->render(out, name, "");
    }
    header(out, "lorax_batch_inference_duration", "histogram", "Engine step wall time in seconds, by step kind");
    batch_prefill_.render(out, "lorax_batch_inference_duration", "method=\"prefill\"");
    batch_decode_.render(out, "lorax_batch_inference_duration", "method=\"decode\"");
    header(out, "lorax_batch_inference_count", "counter", "Engine steps, by step kind");
    sample(out, "lorax_batch_inference_count", "method=\"prefill\"", static_cast<double>(steps_prefill_));
    sample(out, "lorax_batch_inference_count", "method=\"decode\"", static_cast<double>(steps_decode_));

    // The last step's view, or zero once nothing is left in the engine (a finished batch publishes
    // no further step, and LoRAX resets these gauges when its batch empties).
    const bool busy = in_engine_ > 0;
    header(out, "lorax_batch_current_size", "gauge", "Rows in the engine's running batch");
    sample(out, "lorax_batch_current_size", "", busy ? static_cast<double>(last_step_.rows) : 0.0);
    header(out, "lorax_queue_length", "gauge", "Requests waiting for admission");
    sample(out, "lorax_queue_length", "", busy ? static_cast<double>(last_step_.queue_depth) : 0.0);
    header(out, "lorascope_requests_in_engine", "gauge", "Requests submitted to the engine and not yet finished");
    sample(out, "lorascope_requests_in_engine", "", static_cast<double>(in_engine_));
    header(out, "lorascope_kv_cache_bytes", "gauge", "KV cache bytes at the last step");
    sample(out, "lorascope_kv_cache_bytes", "state=\"allocated\"", static_cast<double>(last_step_.kv_bytes_allocated));
    sample(out, "lorascope_kv_cache_bytes", "state=\"in_use\"", busy ? static_cast<double>(last_step_.kv_bytes_in_use) : 0.0);
    // LoRAX has no KV-cache gauge; this one means what vLLM's kv_cache_usage_perc means.
    header(out, "lorascope_kv_cache_usage", "gauge", "Share of the KV cache's blocks in use at the last step (0..1)");
    const bool sized = busy && last_step_.kv_blocks_total > 0;
    sample(out, "lorascope_kv_cache_usage", "",
           sized ? static_cast<double>(last_step_.kv_blocks_used) / static_cast<double>(last_step_.kv_blocks_total) : 0.0);
    header(out, "lorascope_batch_padded_tokens", "gauge", "Padding positions computed in the last step");
    sample(out, "lorascope_batch_padded_tokens", "", busy ? static_cast<double>(last_step_.padded_tokens) : 0.0);
    single(out, "lorascope_client_disconnect_cancels", "counter", "Requests cancelled because their client went away",
           static_cast<double>(disconnect_cancels_));
    single(out, "lorascope_connections_refused", "counter", "Connections answered 429 past --max-connections",
           static_cast<double>(connections_refused_));
    single(out, "lorascope_connections_active", "gauge", "Connections being served", static_cast<double>(connections_));
    single(out, "lorascope_connections_open", "gauge", "Connections held open, idle and slow ones included",
           static_cast<double>(open_connections_));
    by_cause(out, "lorascope_connections_closed", "Connections the server closed on its own, by cause", "why", closed_);
    latency_.render(out, request_e2e_, request_ttft_);
    return out;
}

}  // namespace lorascope::serve
