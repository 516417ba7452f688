#include "lorascope/bench_report.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace lorascope {

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(rank);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double BenchRecorder::now_ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
}

void BenchRecorder::submitted(RequestId id, double at_ms) {
    std::lock_guard<std::mutex> lock(mutex_);
    timings_[id].submitted_ms = at_ms;
}

void BenchRecorder::token(RequestId id) {
    const double now = now_ms();
    std::lock_guard<std::mutex> lock(mutex_);
    auto& t = timings_[id];
    if (t.tokens == 0) {
        t.first_token_ms = now;
    } else {
        t.gaps_ms.push_back(now - t.last_token_ms);
    }
    t.last_token_ms = now;
    ++t.tokens;
}

bool RequestTiming::good(const LatencyTargets& targets) const {
    if (!finished || reason == FinishReason::Error || tokens == 0) return false;
    return (targets.ttft_ms <= 0 || ttft_ms() <= targets.ttft_ms) && (targets.tpot_ms <= 0 || tpot_ms() <= targets.tpot_ms);
}

void BenchRecorder::finished(const FinishEvent& e) {
    const double now = now_ms();
    std::lock_guard<std::mutex> lock(mutex_);
    auto& t = timings_[e.id];
    if (t.finished) return;
    t.finished = true;
    t.finished_ms = now;
    t.reason = e.reason;
    t.error = e.error;
    t.queue_ms = e.usage.queue_ms;
    last_finish_ms_ = std::max(last_finish_ms_, now);
    ++finished_;
}

void BenchRecorder::step(const StepStats& stats) {
    std::lock_guard<std::mutex> lock(mutex_);
    steps_.push_back(stats);
}

BenchFigures BenchRecorder::figures(const LatencyTargets& goodput_targets) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool all_done = finished_ == timings_.size() && !timings_.empty();
    const double wall_ms = all_done ? last_finish_ms_ : now_ms();
    return compute_figures(steps_, timings_, wall_ms / 1000.0, goodput_targets);
}

std::vector<StepStats> BenchRecorder::steps() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return steps_;
}

std::map<RequestId, RequestTiming> BenchRecorder::timings() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return timings_;
}

std::vector<double> BenchRecorder::ttft_ms() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<double> out;
    for (const auto& [id, t] : timings_)
        if (t.tokens > 0) out.push_back(t.first_token_ms - t.submitted_ms);
    return out;
}

std::vector<double> BenchRecorder::per_token_ms() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<double> out;
    for (const auto& [id, t] : timings_) out.insert(out.end(), t.gaps_ms.begin(), t.gaps_ms.end());
    return out;
}

size_t BenchRecorder::finished_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_;
}

namespace {

// The step stream's figures: batching, padding, cache and where the time went.
void add_step_figures(BenchFigures& f, const std::vector<StepStats>& steps) {
    int64_t row_sum = 0, padded = 0, computed = 0, queued_rows = 0;
    for (const StepStats& s : steps) {
        ++f.steps;
        row_sum += s.rows;
        padded += s.padded_tokens;
        computed += s.prefill_tokens + s.decode_tokens + s.padded_tokens;
        f.peak_kv_bytes = std::max(f.peak_kv_bytes, s.kv_bytes_allocated);
        f.cache_bytes_moved += s.cache_bytes_moved;
        f.most_cache_bytes_moved_in_a_step = std::max(f.most_cache_bytes_moved_in_a_step, s.cache_bytes_moved);
        f.cache_bytes_prefilled += s.cache_bytes_prefilled;
        f.kv_blocks_total = s.kv_blocks_total;
        f.steps_with_deferred_prefill += s.prefill_tokens_deferred > 0;
        ++f.steps_by_threads[s.threads];
        if (s.queue_depth > 0) {
            ++f.steps_while_queued;
            queued_rows += s.decode_tokens;   // one position per decoding row
        }
        if (s.prefill_tokens > 0) {
            ++f.prefill_steps;
            f.prefill_step_ms += s.wall_ms;
        } else {
            f.decode_step_ms += s.wall_ms;
        }
    }
    f.mean_batch_rows = f.steps ? static_cast<double>(row_sum) / static_cast<double>(f.steps) : 0.0;
    f.padding_share = computed ? static_cast<double>(padded) / static_cast<double>(computed) : 0.0;
    f.rows_while_queued =
        f.steps_while_queued ? static_cast<double>(queued_rows) / static_cast<double>(f.steps_while_queued) : 0.0;
}

double mean_of(const std::vector<double>& values) {
    return values.empty() ? 0.0 : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// The requests' figures: counts, tokens, latency means and percentiles, and goodput.
void add_request_figures(BenchFigures& f, const std::map<RequestId, RequestTiming>& timings, const LatencyTargets& targets) {
    std::vector<double> ttft, per_token, e2e, queue;
    f.goodput_targets = targets;
    for (const auto& [id, t] : timings) {
        ++f.requests;
        f.generated_tokens += t.tokens;
        f.finished += t.finished;
        if (t.finished && t.reason == FinishReason::Error) {
            ++f.failed_requests;
            if (f.first_error.empty()) f.first_error = t.error;
        }
        if (t.finished && t.queue_ms >= 0) queue.push_back(t.queue_ms);
        f.goodput_requests += t.good(targets);
        if (t.tokens > 0) {
            ttft.push_back(t.ttft_ms());
            e2e.push_back(t.e2e_ms());
        }
        per_token.insert(per_token.end(), t.gaps_ms.begin(), t.gaps_ms.end());
    }
    f.ttft_mean_ms = mean_of(ttft);
    f.ttft_p50_ms = percentile(ttft, 50);
    f.ttft_p95_ms = percentile(ttft, 95);
    f.per_token_p50_ms = percentile(per_token, 50);
    f.per_token_p95_ms = percentile(per_token, 95);
    f.e2e_mean_ms = mean_of(e2e);
    f.e2e_p50_ms = percentile(e2e, 50);
    f.e2e_p95_ms = percentile(e2e, 95);
    f.e2e_p99_ms = percentile(e2e, 99);
    f.queue_p50_ms = percentile(queue, 50);
    f.queue_p95_ms = percentile(queue, 95);
    f.queue_p99_ms = percentile(queue, 99);
    f.goodput_share = f.requests ? static_cast<double>(f.goodput_requests) / static_cast<double>(f.requests) : 0.0;
}

}  // namespace

BenchFigures compute_figures(const std::vector<StepStats>& steps, const std::map<RequestId, RequestTiming>& timings,
                             double wall_s, const LatencyTargets& goodput_targets) {
    BenchFigures f;
    add_step_figures(f, steps);
    add_request_figures(f, timings, goodput_targets);
    f.wall_s = wall_s;
    f.tokens_per_s = wall_s > 0 ? static_cast<double>(f.generated_tokens) / wall_s : 0.0;
    f.goodput_per_s = wall_s > 0 ? static_cast<double>(f.goodput_requests) / wall_s : 0.0;
    return f;
}

void write_steps_csv(std::ostream& out, const std::vector<StepStats>& steps) {
    out << "step,wall_ms,prefill_ms,rows,prefill_tokens,prefill_tokens_deferred,decode_tokens,padded_tokens,"
           "kv_bytes_allocated,kv_bytes_in_use,kv_blocks_used,kv_blocks_total,cache_bytes_moved,queue_depth,threads,row_requests,row_limit,prefill_margin,bulk_prefill,row_plan_ms\n";
    for (const StepStats& s : steps) {
        out << s.step << ',' << s.wall_ms << ',' << s.prefill_ms << ',' << s.rows << ',' << s.prefill_tokens << ',' << s.prefill_tokens_deferred << ','
            << s.decode_tokens << ',' << s.padded_tokens << ',' << s.kv_bytes_allocated << ',' << s.kv_bytes_in_use << ','
            << s.kv_blocks_used << ',' << s.kv_blocks_total << ',' << s.cache_bytes_moved << ',' << s.queue_depth << ',' << s.threads << ',';
        for (size_t i = 0; i < s.row_requests.size(); ++i) out << (i ? ";" : "") << s.row_requests[i];
        out << ',' << s.row_limit << ',' << s.prefill_margin << ',' << (s.bulk_prefill ? 1 : 0) << ',' << s.row_plan_ms << '\n';
    }
}

void write_requests_csv(std::ostream& out, const std::map<RequestId, RequestTiming>& timings) {
    out << "id,tokens,reason,submitted_ms,queue_ms,ttft_ms,tpot_ms,e2e_ms\n";
    const auto old_precision = out.precision(std::numeric_limits<double>::max_digits10);
    for (const auto& [id, t] : timings) {
        out << id << ',' << t.tokens << ',' << (t.finished ? to_string(t.reason) : "running") << ',' << t.submitted_ms << ',';
        if (t.queue_ms >= 0) out << t.queue_ms;
        out << ',';
        if (t.tokens > 0) out << t.ttft_ms() << ',' << t.tpot_ms() << ',' << t.e2e_ms();
        else out << ",,";
        out << '\n';
    }
    out.precision(old_precision);
}

}  // namespace lorascope
