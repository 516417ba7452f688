// The per-step budget in time: how much prefill work a step may do, and how many rows the batch
// may hold, given what step work costs (batching/step_costs.h, measured by the engine as it runs)
// and the user's time-per-output-token target. Every running row gets one token per step, so a
// row's time per output token is the time of the steps it decodes in.
//
// With a target: a step's predicted time (its decoding rows plus its prefill) stays within the
// target. Prefill gets what the rows leave of it (those decoding and the next newcomer's, which
// may join in the step and decode in it too; a step where two join passes the target by one row's
// decoding) and is never forced while rows decode
// (a newcomer whose next unit does not fit waits for rows to leave), and the batch takes newcomers
// only while its rows, plus one unit of the next newcomer's prefill, fit the target.
// Without one: rows are filled as fast as the cap allows. A step that prefills may take up to
// kStepCapFactor x the typical decoding step (StepCosts::typical: decode-only steps weighted by
// their rows, as the per-token figures weigh them), so steps with fewer rows than usual prefill
// more and those with more prefill less; while as many rows wait to join as decode, there is no
// limit (filling the batch is worth more than the few rows' next token); and when the waiting
// prompts would take more than kBulkBacklogSteps capped steps, a step may prefill them whole (a
// bulk step, up to kBulkTargets decoding steps long) while the gaps in steps past the cap stay
// within kCapTailShare.
//
// The target is a 95th percentile, as the reports read it (per-token p95: the gaps between a
// request's tokens over all requests), so with a tail share (TimePolicy::tail_share) the policy
// spends the tail: while the share of recent token gaps over the target leaves room for one more
// step of all the decoding rows, a step may prefill its waiting newcomers whole (a bulk step, at
// most kBulkTargets targets long), and the batch holds the rows whose decoding alone fits the
// target (less the decode-only steps' spread: kDecodeSpreadQuantile) instead of reserving room for
// prefill in every step (while requests queue behind the newcomers, only a bulk step worth its
// gaps, or the first to let the queue's head in: kBulkShare). Chunks beside the rows cost a pass
// over the weights each (a BLOOM 32-token chunk ~60 ms beside a 101 + 1.22 ms-per-row step, W6 on
// the Xeon): reserving one held the batch to ~10 rows. docs/benchmarks.md, issue 33.
//
// Pure arithmetic on the measured costs: tests drive it with synthetic cost models.
#pragma once

#include <algorithm>
#include <cstdint>

#include "batching/step_costs.h"

namespace lorascope::batching {

// Without a target, a step that prefills takes at most this many times the typical decoding step
// (no less than its own decoding rows' step). W5 (docs/benchmarks.md, issue 33; 2 x 20 interleaved
// rounds on the Xeon): 1.5x of each step's own rows, no bulk steps (the policy before) read TTFT p50
// 0.50x / 0.62x of static batching's and per-token p95 1.59x / 1.60x; 1.3x of the typical step with
// bulk steps 0.40x / 0.39x and 1.54x / 1.58x; 1.5x of the typical step with them 0.32x and 1.77x.
constexpr double kStepCapFactor = 1.3;
// Without a target, a bulk step runs when the waiting prompts' prefill, as the fits predict it,
// would take more than this many capped steps (a t5-small prompt needs 7 units, at least 7 steps).
constexpr double kBulkBacklogSteps = 7.0;
// Without a target, the share of token gaps that steps past the cap (bulk or unlimited) may take,
// at most `TimePolicy::tail_share`: W5's per-token p95 weighs every gap, and static batching's
// gaps hold no prefill at all, so a share of 0.04 left the p95 to the capped steps' highest.
constexpr double kCapTailShare = 0.02;

// Under a target, the prefill a step may take is planned against target_ms / margin: the engine
// sets the margin to a high quantile of how far its steps ran over their predictions (StepSpread),
// within [1, kMaxMargin]. The rows are not planned with it: on W6's T5 (Zen 3, 77 ms target) the
// steps over the target were mostly steps that prefilled (109 of 131), and this margin on the row
// limit too fed on itself (fewer rows, a larger share of each step in prefill, whose predictions
// stray most, a larger margin): 8.6 rows and 0.70x static's tokens/s, median of three.
constexpr double kSpreadQuantile = 0.9;
constexpr double kMaxMargin = 1.5;
// The rows have a margin of their own, from decode-only steps (StepCosts::decode_spread: actual /
// the decode fit's prediction, the last 128), which fewer rows do not widen: while those steps'
// gaps past the tolerance are more than their part of the tail (the share less the bulk steps'
// part, kTailShare x (1 - kBulkShare): 2%), the rows are planned for a decoding step of target x
// min(1, (1 + kTailTolerance) / q), q this quantile of that spread. Planned at the target itself, a
// decoding step ran past it about half the time, and past 1.1x of it by a shared CPU's noise and by
// contexts growing faster than the fit follows: W6's T5 on the Zen 4 (2026-12-06, docs/benchmarks.md),
// 3.4-7.5% of all gaps in two runs' CSVs. 12 paired rounds: per-token p95 / target 1.12 -> 1.05
// (rounds past 1.1: 8 -> 1), tokens/s 1.03x -> 1.04x static's (the rows it takes off the steps leave
// room to prefill newcomers a layer at a time beside them). Applied always, it also took rows off
// W6's BLOOM, whose full batch runs within the target by more than the noise (rows while queued
// 28.5 -> 26.6, 3 rounds); held to the decoding steps' part, 29.6 -> 29.5 (7 rounds).
constexpr double kDecodeSpreadQuantile = 0.98;

// The share of token gaps a tail-spending policy lets run over the target: the per-token p95 allows
// 5%, and the steps that run past it by noise (beyond kTailTolerance) count against the same share.
constexpr double kTailShare = 0.04;
// Under a target, the tail counts a gap as over when its step ran past the target by more than this
// share of it. A step of decoding alone planned up to the target runs a few percent either side of
// it by the noise of a shared CPU, and counted in full that noise spent the share the bulk steps
// live on: W6's BLOOM at a 173.8 ms target (the Xeon), 7 runs: 0.7-4% of all gaps were in
// decode-only steps over the target and 0-2% past 1.05x of it (a run in a neighbour's burst: 20%
// and 14%), and one with 4% over, none past 1.05x, prefilled nothing from step 18 to step 121
// while its rows drained from 32 to 6. Held this way, the gaps past 1.05x the target are what the
// share holds, so the per-token p95 may land up to ~1.05x of it (W6, 14 rounds on the Xeon:
// 0.93-1.06x, and one T5 round 1.34x, unexplained).
constexpr double kTailTolerance = 0.05;
// Under a target, a bulk step costs a gap over the target for each decoding row, to let the waiting
// rows in. While requests are queued behind them (more newcomers will come as rows leave), it runs
// only when that cost is within the tail's share of the gaps they will decode
// (StepRows::waiting_gaps); and it is paid by the tail or, when noise has spent that, by this part
// of the share counted over the gaps of bulk steps alone (GapTail `bulk`). Before (dd9e41c) a bulk
// step ran whenever the tail afforded it: the share went first to steps for one newcomer beside
// 29-32 rows (W6's BLOOM on the Xeon: 93-96 gaps for 3 rows), the noise took the rest (decoding
// steps planned at the target: up to 19% of all gaps past 1.05x of it in a noisy hour), no step
// prefilled whole prompts again, the margin kept a 32-token chunk (~60 ms) out until ~3 rows were
// left, and the rows drained 26 -> 3 with 16-36 requests queued. W6's BLOOM, 8 paired rounds
// (2026-12-06, docs/benchmarks.md): tokens/s 0.84x -> 1.04x static's, per-token p95 1.05 (max 1.34)
// -> 0.99 (max 1.10) of the target; TTFT p50 0.33x -> 0.54x, the first newcomer waiting for ~9 rows
// to leave. Without the queue condition a Poisson stream's lone newcomers waited too (W6's T5
// Poisson, 3 rounds: TTFT p50 0.53x -> 0.84x static's). The first bulk step after a row leaves
// while requests queue need not be worth its gaps (StepRows::queue_head): every queued request
// waits behind the queue's head, and the TTFT p50 of a burst twice the batch is the mean of the
// first wave's last and the head's. W6's BLOOM on the Zen 4 (2026-12-06, 7 paired rounds,
// docs/benchmarks.md): TTFT p50 0.61x -> 0.37x static's, for one more bulk step (~31 gaps of 4921);
// tokens/s 0.99x -> 1.00x, per-token p95 1.03 -> 1.00 of the target.
constexpr double kBulkShare = 0.5;
// A bulk step prefills at most this many targets' worth: a burst of 31 BLOOM newcomers' whole
// prompts is ~2600 ms, which a streaming user sees as a stall.
constexpr double kBulkTargets = 8.0;

struct TimePolicy {
    double target_ms = 0;                 // time per output token; 0: none (the cap applies)
    double cap_factor = kStepCapFactor;
    double margin = 1.0;                  // with a target: a step's prefill is planned against target / margin
    double tail_share = 0;                // the share of gaps bulk steps may spend (0: none; at most kCapTailShare without a target)
    double tail_tolerance = kTailTolerance;   // with a target: how far past it a step's gaps count as over (a share of it)
    double bulk_share = kBulkShare;           // with a target: of tail_share, what bulk steps' own gaps may take when noise spent the tail (0: none)
    double decode_margin = 1.0;           // with a target: the rows' margin (kDecodeSpreadQuantile of decode-only steps)
    double planned_ms() const { return target_ms / std::clamp(margin, 1.0, kMaxMargin); }
    // With a target: the decoding step the row limit plans for, target x min(1, (1 + tolerance) / decode_margin).
    double rows_ms() const;
    // With a target: whether a step of `step_ms` counts its gaps as over in the tail (GapTail).
    bool tail_over(double step_ms) const { return step_ms > target_ms * (1 + tail_tolerance); }
};

// The rows of a step as the allowance sees them.
struct StepRows {
    int64_t decoding = 0;    // rows that decode in the step before any newcomer joins
    int64_t waiting = 0;     // admitted rows not decoding yet
    int64_t next_join = 0;   // rows of the first of them: it may join in the step and decode in it too
    int64_t certain_gaps = 0;   // token gaps the admitted rows are certain to decode after this step
    double backlog_ms = 0;      // the waiting rows' prefill as the fits predict it (0: unknown), for a bulk step without a target
    double waiting_gaps = 0;    // the gaps the waiting rows are expected to decode (0: unknown), for a bulk step under a target
    int64_t queued = 0;         // requests queued behind them (not admitted yet)
    bool queue_head = false;    // a row has left since requests began to queue, and no bulk step has let newcomers in since (QueueHead)
};

// The queue's head across steps (StepRows::queue_head), kept by the engine and by the tests'
// simulations alike: since the engine's queue last was empty, None until a row leaves while
// requests queue, then Waiting until a bulk step lets newcomers in beside decoding rows (Served);
// None again when the queue empties.
class QueueHead {
public:
    // At a step boundary: `queued` requests wait behind the admitted ones.
    void boundary(int64_t queued);
    // A row left the batch while `queued` requests wait.
    void row_left(int64_t queued);
    // A step prefilled past its plan (bulk or unlimited) beside rows that decoded.
    void bulk_served();
    bool waiting() const { return state_ == State::Waiting; }

private:
    enum class State { None, Waiting, Served };
    State state_ = State::None;
};

struct PrefillAllowance {
    bool unlimited = false;   // nobody decodes, or (no target) as many rows wait as decode
    double ms = 0;            // otherwise: the prefill time the step may spend
    bool forced = false;      // at least one unit of prefill even when none fits (no target)
    bool bulk = false;        // the tail pays for a step that prefills whole prompts
};

// With a target: the rows' margin (TimePolicy::decode_margin): 1 while the decode-only steps' gaps
// past the tolerance (StepCosts::decode_tail) are within their part of the tail, tail_share x
// (1 - bulk_share); otherwise the kDecodeSpreadQuantile of the decode-only steps' spread.
double decode_margin(const StepCosts& costs, const TimePolicy& policy);

// The step's prefill allowance (`costs.tail`: the gaps so far, for a bulk step; `costs.typical`: the
// cap's measure without a target, each step's own decoding until it has a sample).
PrefillAllowance prefill_allowance(const StepCosts& costs, const TimePolicy& policy, const StepRows& rows);

// The allowance as work of one kind: how many units of x (prompt positions for `fit` =
// costs.prefill, layer-positions for costs.encoder) fit in `ms`. Before the fit has a sample,
// `cold` (the engine's old token budget, so that the first steps behave as they did).
int64_t work_within(const CostFit& fit, double ms, int64_t cold);

// With a target: the rows the batch may hold, counting those being prefilled: the most whose
// decoding step plus `unit_ms` (one unit of a newcomer's prefill; none with a tail share, whose
// bulk steps prefill instead) stays within TimePolicy::rows_ms(), at least 1 and at most
// `max_rows`. Before the decode fit has a sample, the steps timed before any
// request (StepCosts::decode_prior) stand for it, so that the first wave has a measured limit;
// `max_rows` without a target or without either.
// `last`: the last step that decoded, as measured. When it ran within rows_ms() with room for
// `unit_ms`, the limit is at least one row more than it had, whatever the fit says: a fit that has
// only seen a few rows cannot tell what more would cost (its slope leans to the proportional line,
// and a step of 1 row costs ~16 ms of fixed work on W6's T5: 32 rows "cost" 512 ms), so without
// this a batch once shrunk stayed shrunk (W6's T5 at a 68 ms target on the Zen 3: 1-2 rows for
// hundreds of steps while 90 requests waited, 0.70x static's tokens/s).
struct StepSeen {
    int64_t rows = 0;
    double ms = 0;
};
int64_t row_limit(const StepCosts& costs, const TimePolicy& policy, int64_t max_rows, double unit_ms,
                  const StepSeen& last = {});

}  // namespace lorascope::batching
