// What the engine's step work costs in time, measured as it runs: a straight-line fit of
// milliseconds against the work's size for each kind of work (decoding rows, prompt positions of
// a decoder-only prefill pass, layer-positions of an encoder pass), refreshed after every pass so
// that it follows the machine (threads, neighbours, a GPU) and the batch (context lengths grow).
// The latency policy (batching/time_budget.h) reads it; nothing here measures time itself, so it
// is tested with synthetic samples.
#pragma once

#include <cstdint>

namespace lorascope::batching {

// An exponentially weighted least-squares fit of y = a + b x (a, b >= 0): each sample's weight
// halves every `half_life` samples. Where the recent samples' x barely varies (a batch that stays
// at 32 rows) the slope is not identified by them, and the fit leans towards the line through the
// origin and their mean (y proportional to x): it predicts exactly at the x it sees, and assumes
// no fixed cost when asked about other sizes.
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
};

// The three kinds of step work the engine measures.
struct StepCosts {
    CostFit decode;    // a step without its prefill: x = rows decoded (everything else is in a)
    CostFit prefill;   // one decoder-only prefill pass: x = positions computed (padding included)
    CostFit encoder;   // one run of encoder units: x = units x padded positions of a unit
};

}  // namespace lorascope::batching
