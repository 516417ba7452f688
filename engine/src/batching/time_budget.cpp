#include "batching/time_budget.h"

#include <algorithm>
#include <cmath>

namespace lorascope::batching {

PrefillAllowance prefill_allowance(const StepCosts& costs, const TimePolicy& policy, const StepRows& rows) {
    PrefillAllowance a;
    if (rows.decoding <= 0) {
        a.unlimited = true;
        return a;
    }
    const double decode_ms = costs.decode.predict(static_cast<double>(rows.decoding));
    if (policy.target_ms > 0) {
        const double with_next = costs.decode.predict(static_cast<double>(rows.decoding + std::max<int64_t>(0, rows.next_join)));
        a.ms = costs.decode.ready() ? std::max(0.0, policy.planned_ms() - with_next) : 0.0;
        // A bulk step only when its decoding rows' gaps are within the share of the gaps its
        // newcomers will decode (or it lets in the queue's head), paid by the tail or, when noise
        // has spent that, by the bulk steps' own share (their gaps alone counted).
        const bool worth = rows.queued <= 0 || rows.waiting_gaps <= 0 || rows.queue_head ||
                           static_cast<double>(rows.decoding) <= policy.tail_share * rows.waiting_gaps;
        const bool paid = costs.tail.affords(rows.decoding, policy.tail_share, rows.certain_gaps) ||
                          costs.bulk.affords(rows.decoding, policy.tail_share * std::clamp(policy.bulk_share, 0.0, 1.0), rows.certain_gaps);
        if (rows.waiting > 0 && costs.decode.ready() && worth && paid) {
            a.bulk = true;
            a.ms = std::max(a.ms, kBulkTargets * policy.target_ms - with_next);
        }
        // Before the first decode sample nothing is known: one unit, as the token budget did.
        a.forced = !costs.decode.ready();
        return a;
    }
    if (rows.waiting >= rows.decoding) {
        a.unlimited = true;
        return a;
    }
    const double typical = costs.typical.ready() ? costs.typical.ms() : decode_ms;
    a.ms = std::max(0.0, policy.cap_factor * typical - decode_ms);
    a.forced = true;
    const double share = std::min(policy.tail_share, kCapTailShare);
    if (rows.waiting > 0 && share > 0 && costs.decode.ready() && rows.backlog_ms > kBulkBacklogSteps * a.ms &&
        costs.tail.affords(rows.decoding, share, rows.certain_gaps)) {
        a.bulk = true;
        a.ms = std::max(a.ms, (kBulkTargets - 1.0) * decode_ms);
    }
    return a;
}

void QueueHead::boundary(int64_t queued) {
    if (queued <= 0) state_ = State::None;
}

void QueueHead::row_left(int64_t queued) {
    if (queued > 0 && state_ == State::None) state_ = State::Waiting;
}

void QueueHead::bulk_served() {
    if (state_ == State::Waiting) state_ = State::Served;
}

int64_t work_within(const CostFit& fit, double ms, int64_t cold) {
    if (!fit.ready()) return cold;
    const double x = fit.largest_within(ms);
    return x >= 1e15 ? int64_t(1e15) : static_cast<int64_t>(std::floor(x));
}

double decode_margin(const StepCosts& costs, const TimePolicy& policy) {
    if (policy.target_ms <= 0) return 1.0;
    // Within their part of the tail, decoding steps keep the rows the target holds.
    const double part = policy.tail_share * (1 - std::clamp(policy.bulk_share, 0.0, 1.0));
    if (costs.decode_tail.over() <= part * costs.decode_tail.gaps()) return 1.0;
    return costs.decode_spread.quantile(kDecodeSpreadQuantile);
}

double TimePolicy::rows_ms() const {
    return target_ms * std::min(1.0, (1 + tail_tolerance) / std::clamp(decode_margin, 1.0, kMaxMargin));
}

int64_t row_limit(const StepCosts& costs, const TimePolicy& policy, int64_t max_rows, double unit_ms,
                  const StepSeen& last) {
    const CostFit& decode = costs.decode_or_prior();
    if (policy.target_ms <= 0 || !decode.ready()) return max_rows;
    if (policy.tail_share > 0) unit_ms = 0;
    const double rows = decode.largest_within(policy.rows_ms() - std::max(0.0, unit_ms));
    int64_t limit = rows >= static_cast<double>(max_rows) ? max_rows : std::max<int64_t>(1, static_cast<int64_t>(std::floor(rows)));
    if (last.rows > 0 && last.ms + std::max(0.0, unit_ms) <= policy.rows_ms())
        limit = std::max(limit, std::min(max_rows, last.rows + 1));
    return limit;
}

}  // namespace lorascope::batching
