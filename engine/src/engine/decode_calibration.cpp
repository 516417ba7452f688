#include "engine/decode_calibration.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <ATen/ATen.h>

namespace lorascope::engine_detail {

namespace {

// Decoding steps timed per size, of which the median counts. One timed step read a neighbour's
// burst as the machine's speed, and the first wave, sized by it, cannot be grown back by a bulk step
// until its first row leaves: W6's BLOOM at a 137 ms target (Zen 4, a neighbour at load ~2), a first
// wave of 24 rows ran steps of ~105 ms while the 6 rows the limit then admitted waited 28 steps for
// their prefill (TTFT p50 0.82x static's; 0.37-0.59x in rounds whose first wave held 32). 28 paired
// starts at a 140 ms target: first waves below 32 rows 13 -> 6 (docs/benchmarks.md, issue 33).
// ~0.3 s more at start.
constexpr int kTimedSteps = 3;

double median(std::vector<double> ms) {
    if (ms.empty()) return 0;
    const auto mid = ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2);
    std::nth_element(ms.begin(), mid, ms.end());
    return *mid;
}

}  // namespace

double time_decode_step(const models::Model& model, int64_t rows) {
    const auto device = model.options().device();
    const std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(rows), std::vector<int64_t>{0});
    auto [state, logits] = model.prefill(models::TokenBatch::from_rows(prompts, model.pad_token_id(), device));
    at::Tensor tokens = logits.argmax(-1);
    std::vector<double> ms;
    for (int i = 0; i < 1 + kTimedSteps; ++i) {
        const auto started = std::chrono::steady_clock::now();
        // The token choice and its copy to the host are part of a step (and wait for a GPU).
        tokens = model.decode_step(state, tokens).argmax(-1);
        (void)tokens.to(at::kCPU);
        if (i > 0) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    }
    return median(ms);
}

void calibrate_decode(const models::Model& model, int64_t max_rows, batching::CostFit& fit) {
    fit.add(1, time_decode_step(model, 1));
    if (max_rows > 1) fit.add(static_cast<double>(max_rows), time_decode_step(model, max_rows));
}

}  // namespace lorascope::engine_detail
