#include "lab/lab_run_data.h"

#include <QCoreApplication>
#include <algorithm>

namespace lorascope::ui {

QString labStateName(LabRequestState state) {
    switch (state) {
        case LabRequestState::Waiting: return QCoreApplication::translate("Lab", "not yet arrived");
        case LabRequestState::Queued: return QCoreApplication::translate("Lab", "queued");
        case LabRequestState::Prefill: return QCoreApplication::translate("Lab", "prefill");
        case LabRequestState::Decoding: return QCoreApplication::translate("Lab", "decoding");
        case LabRequestState::Finished: return QCoreApplication::translate("Lab", "finished");
        case LabRequestState::Cancelled: return QCoreApplication::translate("Lab", "cancelled");
        case LabRequestState::Error: return QCoreApplication::translate("Lab", "error");
    }
    return {};
}

void LabRunData::reset(const std::vector<Request>& requests, const std::vector<double>& arrivals_s) {
    const uint64_t revision = revision_ + 1;   // kept across the reset: a view must see every row anew
    *this = LabRunData();
    revision_ = revision;
    requests_.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
        LabRequest& r = requests_[i];
        r.revision = revision_;
        r.adapter = QString::fromStdString(requests[i].adapter);
        r.prompt_tokens = requests[i].input_ids.empty() && requests[i].prompt ? int64_t(requests[i].prompt->size())
                                                                              : int64_t(requests[i].input_ids.size());
        r.max_new_tokens = requests[i].params.max_new_tokens.value_or(0);
        r.arrival_s = i < arrivals_s.size() ? arrivals_s[i] : 0.0;
    }
}

int LabRunData::indexOf(RequestId id) const {
    const auto it = index_of_.find(id);
    return it == index_of_.end() ? -1 : it->second;
}

void LabRunData::apply(const LabEvents& events) {
    if (events.empty()) return;
    const uint64_t revision = ++revision_;
    for (const auto& [index, id] : events.submits) {
        if (index >= requests_.size()) continue;
        LabRequest& r = requests_[index];
        r.revision = revision;
        r.id = id;
        if (r.state == LabRequestState::Waiting) r.state = LabRequestState::Queued;
        r.submit_step = int64_t(steps_.size());
        index_of_[id] = int(index);
    }
    for (const StepStats& s : events.steps) {
        const int step_index = int(steps_.size());
        steps_.push_back(s);
        max_rows_ = std::max(max_rows_, int(s.row_requests.size()));
        for (size_t row = 0; row < s.row_requests.size(); ++row) {
            const int i = indexOf(s.row_requests[row]);
            if (i < 0) continue;
            LabRequest& r = requests_[size_t(i)];
            r.revision = revision;
            if (r.first_step < 0) r.first_step = step_index;
            r.last_step = step_index;
            const bool prefill = row < s.row_prefill.size() && s.row_prefill[row];
            if (r.state == LabRequestState::Queued || r.state == LabRequestState::Prefill || r.state == LabRequestState::Decoding)
                r.state = prefill ? LabRequestState::Prefill : LabRequestState::Decoding;
            if (row < s.row_kv_blocks.size()) r.peak_kv_blocks = std::max(r.peak_kv_blocks, s.row_kv_blocks[row]);
        }
    }
    for (RequestId id : events.tokens) {
        ++generated_;
        const int i = indexOf(id);
        if (i < 0) continue;
        ++requests_[size_t(i)].generated;
        requests_[size_t(i)].revision = revision;
    }
    for (const FinishEvent& f : events.finishes) {
        const int i = indexOf(f.id);
        if (i < 0) continue;
        LabRequest& r = requests_[size_t(i)];
        r.revision = revision;
        r.state = f.reason == FinishReason::Cancelled ? LabRequestState::Cancelled
                  : f.reason == FinishReason::Error   ? LabRequestState::Error
                                                      : LabRequestState::Finished;
        r.error = QString::fromStdString(f.error);
        r.queue_ms = f.usage.queue_ms;
        r.ttft_ms = f.usage.time_to_first_token_ms;
        r.total_ms = f.usage.total_ms;
        if (f.usage.prompt_tokens > 0) r.prompt_tokens = f.usage.prompt_tokens;
        ++finished_;
    }
}

void LabRunData::setFigures(const BenchFigures& figures, std::vector<double> ttft_ms, std::vector<double> per_token_ms,
                            std::map<RequestId, RequestTiming> timings) {
    figures_ = figures;
    ttft_ms_ = std::move(ttft_ms);
    per_token_ms_ = std::move(per_token_ms);
    timings_ = std::move(timings);
    has_figures_ = true;
}

void LabRunData::recountGoodput(const LatencyTargets& targets) {
    if (has_figures_) figures_ = compute_figures(steps_, timings_, figures_.wall_s, targets);
}

std::vector<double> LabRunData::e2eMs() const {
    std::vector<double> out;
    for (const auto& [id, t] : timings_)
        if (t.tokens > 0) out.push_back(t.e2e_ms());
    return out;
}

void LabRunData::cancelUnfinished() {
    const uint64_t revision = ++revision_;
    for (LabRequest& r : requests_) {
        if (r.state == LabRequestState::Finished || r.state == LabRequestState::Cancelled || r.state == LabRequestState::Error)
            continue;
        r.state = LabRequestState::Cancelled;
        r.revision = revision;
        ++finished_;
    }
}

int LabRunData::cellAt(int step, int row) const {
    if (step < 0 || step >= int(steps_.size()) || row < 0) return -1;
    const StepStats& s = steps_[size_t(step)];
    if (row >= int(s.row_requests.size())) return -1;
    return indexOf(s.row_requests[size_t(row)]);
}

bool LabRunData::joinedAt(int step, int row) const {
    if (step < 0 || step >= int(steps_.size()) || row < 0) return false;
    const StepStats& s = steps_[size_t(step)];
    return row < int(s.row_prefill.size()) && s.row_prefill[size_t(row)];
}

}  // namespace lorascope::ui
