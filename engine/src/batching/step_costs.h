// What the engine's step work costs in time, measured as it runs: a straight-line fit of
// milliseconds against the work's size for each kind of work (decoding rows, prompt positions of
// a decoder-only prefill pass, layer-positions of an encoder pass), refreshed after every pass so
// that it follows the machine (threads, neighbours, a GPU) and the batch (context lengths grow).
// The latency policy (batching/time_budget.h) reads it; nothing here measures time itself, so it
// is tested with synthetic samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace lorascope::batching {

// An exponentially weighted least-squares fit of y = a + b x (a, b >= 0): each sample's weight
// halves every `half_life` samples. Where the recent samples' x barely varies (a batch that stays
// at 32 rows) the slope is not identified by them, and the fit leans towards the line through the
// origin and their mean (y proportional to x): it predicts exactly at the x it sees, and assumes
// no fixed cost when asked about other sizes.
//
// The fixed cost is at most the smallest of the last 16 samples (no pass costs less than its fixed
// part). A straight line is a poor model of an encoder pass: per layer-position a one-prompt pass of
// a t5-small shape cost 0.07-0.08 ms and a 7-prompt one 0.044 (fewer rows use the products less
// well), so a fit over W6's first passes (7 prompts each) read a 35 ms fixed cost, and the latency
// policy held back newcomers whose layers took 4-9 ms: it predicted 27-44 ms for one.
class CostFit {
public:
    explicit CostFit(double half_life = 24);

    // A sample far off the line (a neighbour's burst on a shared CPU) moves the fit at most as far
    // as a sample 3x the prediction would, once 8 samples are in.
    void add(double x, double y);
    bool ready() const { return samples_ > 0; }
    int64_t samples() const { return samples_; }
    double intercept() const;    // a (0 until ready)
    double slope() const;        // b (0 until ready)
    double predict(double x) const { return intercept() + slope() * x; }
    // The largest x >= 0 whose prediction stays within `y` (0 when even x = 0 does not; a large
    // number when the slope is 0 and the intercept fits).
    double largest_within(double y) const;

private:
    void fit(double& a, double& b) const;

    double decay_;
    double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
    int64_t samples_ = 0;
    std::deque<double> recent_y_;   // the last samples' y (as added), for the bound on the fixed cost
};

// How far whole steps run from what the fits predicted for them: actual / predicted over the last
// `window` steps. A step planned right up to a target overruns it about half the time (the noise of
// a shared CPU, and what the fits leave out: attention grows with the context while the rows stay
// put), and a row's time per token is its steps' time; so the latency policy plans a step's
// prefill against the target divided by a high quantile of this ratio (TimePolicy::margin).
// Measured on W6's T5 under a 77 ms target without it: 131 of 940 steps over the target (109 of
// them steps that prefilled), per-token p95 1.12x the target.
class StepSpread {
public:
    explicit StepSpread(int window = 64);
    void add(double predicted_ms, double actual_ms);   // ignored unless both are > 0
    int64_t samples() const { return static_cast<int64_t>(ratios_.size()); }
    // The q-quantile of the window's ratios (nearest rank); 1 until 8 steps are in.
    double quantile(double q) const;

private:
    std::size_t window_;
    std::deque<double> ratios_;
};

// The token gaps decoded so far and how many ran over a target: one per row that decoded in a step
// after its first token, counted as over as the caller says (the engine: when the step's time passed
// the target by more than TimePolicy::tail_tolerance, batching/time_budget.h). Both decay with a
// half-life of `half_life` gaps, so that a long quiet stretch does not bank a tail that a burst then
// spends in a row of bulk steps (4096: the share is held over about 5900 gaps, 185 steps of 32 rows,
// more than W6's BLOOM has in all).
class GapTail {
public:
    explicit GapTail(double half_life = 4096);
    void add(int64_t gaps, bool over);
    double gaps() const { return gaps_; }
    double over() const { return over_; }
    // Whether `gaps` more gaps, all over the target, keep the over share within `share`, counting
    // `future` gaps that are certain to come (rows that cannot stop before their token limit) while
    // the window (1 / (1 - decay) gaps, ~5900) is not full: spending the share early gives the first
    // newcomers their first tokens steps sooner (W6's BLOOM, 64 requests at once: the 33rd's first
    // token, TTFT p50, came at step 66 of a 181.7 ms target without them, at step ~15 with them).
    bool affords(int64_t gaps, double share, int64_t future = 0) const;

private:
    double decay_;
    double gaps_ = 0, over_ = 0;
};

// A decoding step's time as the token gaps see it: the mean of decode-only step times, each weighted by
// the rows that decoded in it, with a half-life of `half_life` gaps. Without a target the cap is taken
// against it rather than against each step's own rows: the per-token p95 weighs a step by its rows, so
// a cap on the step's own time gave the most prefill to the steps with the most rows (W5, docs/benchmarks.md,
// issue 33: 41% of one run's gaps were such steps over 1.5x static batching's p95).
class GapWeightedStep {
public:
    explicit GapWeightedStep(double half_life = 256);
    void add(int64_t rows, double decode_ms);   // ignored unless rows > 0 and the time is finite, >= 0
    bool ready() const { return ready_; }
    double ms() const { return mean_; }

private:
    double decay_;
    double mean_ = 0;
    bool ready_ = false;
};

// The kinds of step work the engine measures, and how far whole steps stray from them.
struct StepCosts {
    CostFit decode;    // a step without its prefill: x = rows decoded (everything else is in a)
    // Decoding steps timed before any request, on throwaway one-token prompts (under a target:
    // engine/decode_calibration.h): the row limit's measure until `decode` has a sample, and no
    // longer. Their short context makes them cheaper than the steps that follow (and their
    // 32-row step made a fit that kept them admit rows a Poisson stream's real steps could not
    // hold: W6's T5, one round's per-token p95 1.36x the target).
    CostFit decode_prior;
    CostFit prefill;   // one decoder-only prefill pass: x = positions computed (padding included)
    CostFit encoder;   // one run of encoder units: x = units x padded positions of a unit
    StepSpread spread; // whole steps: actual / (decode + prefill predicted when they were planned)
    StepSpread decode_spread{128};   // decode-only steps: actual / decode predicted (the row limit's margin)
    GapTail decode_tail;             // under a target: the gaps of decode-only steps, and those past the tolerance
    GapTail tail;      // the token gaps and those over the target (none: those in steps past the cap)
    GapTail bulk;      // under a target: the token gaps and those in bulk steps alone (time_budget.h, kBulkShare)
    GapWeightedStep typical;   // the decode-only step as the gaps see it (the cap's measure)

    // The decoding step's measure: `decode` once it has a sample, `decode_prior` until then.
    const CostFit& decode_or_prior() const { return decode.ready() ? decode : decode_prior; }
};

}  // namespace lorascope::batching
