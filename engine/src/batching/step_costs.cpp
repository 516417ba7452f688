#include "batching/step_costs.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lorascope::batching {

namespace {
// Samples before outliers are clipped, and how far: a step of a 2-core run beside a compiling
// neighbour took up to 3x its usual time here, and one such step should not halve the next
// steps' budgets.
constexpr int64_t kClipAfterSamples = 8;
constexpr double kClipFactor = 3.0;
// How much spread of x (relative to its mean) counts as enough to read a slope from.
constexpr double kSlopeSpread = 0.05;
// Samples whose smallest y bounds the fixed cost.
constexpr size_t kFloorWindow = 16;
}  // namespace

CostFit::CostFit(double half_life) : decay_(std::pow(0.5, 1.0 / std::max(1.0, half_life))) {}

void CostFit::add(double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y) || x < 0 || y < 0) return;
    if (samples_ >= kClipAfterSamples) {
        const double expected = predict(x);
        if (expected > 0) y = std::clamp(y, expected / kClipFactor, expected * kClipFactor);
    }
    w_ = decay_ * w_ + 1;
    sx_ = decay_ * sx_ + x;
    sy_ = decay_ * sy_ + y;
    sxx_ = decay_ * sxx_ + x * x;
    sxy_ = decay_ * sxy_ + x * y;
    ++samples_;
    recent_y_.push_back(y);
    if (recent_y_.size() > kFloorWindow) recent_y_.pop_front();
}

// Ridge towards the proportional line: the slope is (cov + k b0) / (var + k), with b0 the slope
// of the line through the origin and the mean and k a small share of the mean's square, so the
// samples' own slope wins as soon as their x spread by a few percent.
void CostFit::fit(double& a, double& b) const {
    a = b = 0;
    if (w_ <= 0) return;
    const double mx = sx_ / w_, my = sy_ / w_;
    if (mx <= 0) {
        a = std::max(0.0, my);
        return;
    }
    const double var = std::max(0.0, sxx_ / w_ - mx * mx);
    const double cov = sxy_ / w_ - mx * my;
    const double k = kSlopeSpread * kSlopeSpread * mx * mx;
    b = std::max(0.0, (cov + k * (my / mx)) / (var + k));
    a = my - b * mx;
    if (a < 0) {   // the samples say "no fixed cost": the best line through the origin
        a = 0;
        b = sxx_ > 0 ? std::max(0.0, sxy_ / sxx_) : 0.0;
    }
    const double floor = recent_y_.empty() ? a : *std::min_element(recent_y_.begin(), recent_y_.end());
    if (a > floor && sxx_ > 0) {   // the best line with that fixed cost: y - floor = b x
        a = floor;
        b = std::max(0.0, (sxy_ - a * sx_) / sxx_);
    }
}

double CostFit::intercept() const {
    double a, b;
    fit(a, b);
    return a;
}

double CostFit::slope() const {
    double a, b;
    fit(a, b);
    return b;
}

double CostFit::largest_within(double y) const {
    double a, b;
    fit(a, b);
    if (a > y) return 0;
    if (b <= 0) return 1e18;
    return (y - a) / b;
}

StepSpread::StepSpread(int window) : window_(static_cast<size_t>(std::max(8, window))) {}

void StepSpread::add(double predicted_ms, double actual_ms) {
    if (!(predicted_ms > 0) || !(actual_ms > 0) || !std::isfinite(predicted_ms) || !std::isfinite(actual_ms)) return;
    ratios_.push_back(actual_ms / predicted_ms);
    if (ratios_.size() > window_) ratios_.pop_front();
}

double StepSpread::quantile(double q) const {
    if (ratios_.size() < 8) return 1.0;
    // Read several times a step (the prefill's margin and, under a target, the rows'): a selection,
    // not a sort.
    std::vector<double> v(ratios_.begin(), ratios_.end());
    const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size()));
    const size_t i = std::min(static_cast<size_t>(std::max(1.0, rank)) - 1, v.size() - 1);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
    return v[i];
}

GapWeightedStep::GapWeightedStep(double half_life) : decay_(std::pow(0.5, 1.0 / std::max(1.0, half_life))) {}

void GapWeightedStep::add(int64_t rows, double decode_ms) {
    if (rows <= 0 || !std::isfinite(decode_ms) || decode_ms < 0) return;
    if (!ready_) {
        mean_ = decode_ms;
        ready_ = true;
        return;
    }
    const double kept = std::pow(decay_, static_cast<double>(rows));
    mean_ = mean_ * kept + decode_ms * (1 - kept);
}

GapTail::GapTail(double half_life) : decay_(std::pow(0.5, 1.0 / std::max(1.0, half_life))) {}

void GapTail::add(int64_t gaps, bool over) {
    if (gaps <= 0) return;
    const double kept = std::pow(decay_, static_cast<double>(gaps));
    gaps_ = gaps_ * kept + static_cast<double>(gaps);
    over_ = over_ * kept + (over ? static_cast<double>(gaps) : 0.0);
}

bool GapTail::affords(int64_t gaps, double share, int64_t future) const {
    if (gaps <= 0 || share <= 0) return false;
    const double kept = std::pow(decay_, static_cast<double>(gaps));
    const double n = static_cast<double>(gaps);
    // The future fills the window only as far as it is not full yet: in a steady state, counting the
    // rows' coming gaps too would hold the share over more gaps than the window keeps (W6's T5 shape
    // in tests/batching: 5.2% over against a 4% share).
    const double room = std::max(0.0, 1.0 / (1.0 - decay_) - (gaps_ * kept + n));
    const double coming = std::min(room, static_cast<double>(std::max<int64_t>(0, future)));
    return over_ * kept + n <= share * (gaps_ * kept + n + coming);
}

}  // namespace lorascope::batching
