#include "lorascope/bench_report.h"

#include <algorithm>

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

void BenchRecorder::finished(const FinishEvent& e) {
    const double now = now_ms();
    std::lock_guard<std::mutex> lock(mutex_);
    auto& t = timings_[e.id];
    if (t.finished) return;
    t.finished = true;
    t.finished_ms = now;
    t.reason = e.reason;
    t.error = e.error;
    last_finish_ms_ = std::max(last_finish_ms_, now);
    ++finished_;
}

void BenchRecorder::step(const StepStats& stats) {
    std::lock_guard<std::mutex> lock(mutex_);
    steps_.push_back(stats);
}

BenchFigures BenchRecorder::figures() const {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool all_done = finished_ == timings_.size() && !timings_.empty();
    const double wall_ms = all_done ? last_finish_ms_ : now_ms();
    return compute_figures(steps_, timings_, wall_ms / 1000.0);
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

BenchFigures compute_figures(const std::vector<StepStats>& steps, const std::map<RequestId, RequestTiming>& timings,
                             double wall_s) {
    BenchFigures f;
    int64_t row_sum = 0, padded = 0, computed = 0;
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
        if (s.prefill_tokens > 0) {
            ++f.prefill_steps;
            f.prefill_step_ms += s.wall_ms;
        } else {
            f.decode_step_ms += s.wall_ms;
        }
    }
    f.mean_batch_rows = f.steps ? static_cast<double>(row_sum) / static_cast<double>(f.steps) : 0.0;
    f.padding_share = computed ? static_cast<double>(padded) / static_cast<double>(computed) : 0.0;

    std::vector<double> ttft, per_token;
    for (const auto& [id, t] : timings) {
        ++f.requests;
        f.generated_tokens += t.tokens;
        f.finished += t.finished;
        if (t.finished && t.reason == FinishReason::Error) {
            ++f.failed_requests;
            if (f.first_error.empty()) f.first_error = t.error;
        }
        if (t.tokens > 0) ttft.push_back(t.first_token_ms - t.submitted_ms);
        per_token.insert(per_token.end(), t.gaps_ms.begin(), t.gaps_ms.end());
    }
    f.wall_s = wall_s;
    f.tokens_per_s = wall_s > 0 ? static_cast<double>(f.generated_tokens) / wall_s : 0.0;
    f.ttft_p50_ms = percentile(ttft, 50);
    f.ttft_p95_ms = percentile(ttft, 95);
    f.per_token_p50_ms = percentile(per_token, 50);
    f.per_token_p95_ms = percentile(per_token, 95);
    return f;
}

void write_steps_csv(std::ostream& out, const std::vector<StepStats>& steps) {
    out << "step,wall_ms,rows,prefill_tokens,prefill_tokens_deferred,decode_tokens,padded_tokens,"
           "kv_bytes_allocated,kv_bytes_in_use,kv_blocks_used,kv_blocks_total,cache_bytes_moved,queue_depth,row_requests\n";
    for (const StepStats& s : steps) {
        out << s.step << ',' << s.wall_ms << ',' << s.rows << ',' << s.prefill_tokens << ',' << s.prefill_tokens_deferred << ','
            << s.decode_tokens << ',' << s.padded_tokens << ',' << s.kv_bytes_allocated << ',' << s.kv_bytes_in_use << ','
            << s.kv_blocks_used << ',' << s.kv_blocks_total << ',' << s.cache_bytes_moved << ',' << s.queue_depth << ',';
        for (size_t i = 0; i < s.row_requests.size(); ++i) out << (i ? ";" : "") << s.row_requests[i];
        out << '\n';
    }
}

}  // namespace lorascope
