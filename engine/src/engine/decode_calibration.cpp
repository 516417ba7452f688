#include "engine/decode_calibration.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <ATen/ATen.h>

namespace lorascope::engine_detail {

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
    return median_step_ms(ms);
}

double median_step_ms(std::vector<double> ms) {
    if (ms.empty()) return 0;
    const auto mid = ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2);
    std::nth_element(ms.begin(), mid, ms.end());
    return *mid;
}

void calibrate_decode(const models::Model& model, int64_t max_rows, batching::CostFit& fit) {
    fit.add(1, time_decode_step(model, 1));
    if (max_rows > 1) fit.add(static_cast<double>(max_rows), time_decode_step(model, max_rows));
}

}  // namespace lorascope::engine_detail
