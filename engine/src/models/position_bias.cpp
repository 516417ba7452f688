#include "models/position_bias.h"

#include <algorithm>
#include <cmath>

#include "models/kv_pool.h"

namespace lorascope::models {

at::Tensor t5_relative_buckets(const at::Tensor& relative_position, bool bidirectional, int64_t num_buckets,
                               int64_t max_distance) {
    at::Tensor buckets = at::zeros_like(relative_position);
    at::Tensor n;
    if (bidirectional) {
        num_buckets /= 2;
        buckets = buckets + (relative_position > 0).to(at::kLong) * num_buckets;
        n = relative_position.abs();
    } else {
        n = -at::clamp_max(relative_position, 0);
    }
    const int64_t max_exact = num_buckets / 2;
    at::Tensor is_small = n < max_exact;
    at::Tensor large = max_exact + (at::log(n.to(at::kFloat) / max_exact) /
                                    std::log(static_cast<double>(max_distance) / max_exact) *
                                    (num_buckets - max_exact))
                                       .to(at::kLong);
    large = at::clamp_max(large, num_buckets - 1);
    return buckets + at::where(is_small, n, large);
}

at::Tensor alibi_slopes(int64_t heads, at::TensorOptions options) {
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    const int64_t pow2 = int64_t(1) << static_cast<int64_t>(std::floor(std::log2(static_cast<double>(heads))));
    const double base_value = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(pow2)) - 3)));
    at::Tensor base = at::tensor({static_cast<float>(base_value)}, f32);
    at::Tensor slopes = at::pow(base, at::arange(1, 1 + pow2, at::TensorOptions().dtype(at::kInt)));
    if (pow2 != heads) {
        const double extra_value = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(2 * pow2)) - 3)));
        at::Tensor extra_base = at::tensor({static_cast<float>(extra_value)}, f32);
        const int64_t remaining = std::min(pow2, heads - pow2);
        at::Tensor extra = at::pow(extra_base, at::arange(1, 1 + 2 * remaining, 2, at::TensorOptions().dtype(at::kInt)));
        slopes = at::cat({slopes, extra}, 0);
    }
    return slopes.to(options.device()).to(options.dtype().toScalarType());
}

at::Tensor query_positions(const std::vector<int64_t>& past, int64_t T, const at::Device& device) {
    const auto opts = at::TensorOptions().dtype(at::kLong);
    at::Tensor base = at::tensor(past, opts).unsqueeze(1);
    return (base + at::arange(T, opts).unsqueeze(0)).to(device);
}

at::Tensor causal_mask(const std::vector<int64_t>& past, int64_t T, int64_t L, at::TensorOptions options,
                       std::optional<int64_t> window) {
    const bool equal = std::all_of(past.begin(), past.end(), [&](int64_t n) { return n == past.front(); });
    const int64_t last_query = past.empty() ? 0 : *std::max_element(past.begin(), past.end()) + T - 1;
    const bool window_hides = window && last_query >= *window;
    if (T == 1 && equal && (past.empty() || past.front() + 1 == L) && !window_hides) return at::Tensor();
    const int64_t B = static_cast<int64_t>(past.size());
    at::Tensor q = query_positions(past, T, options.device()).unsqueeze(2);                          // [B, T, 1]
    at::Tensor k = at::arange(L, at::TensorOptions().dtype(at::kLong).device(options.device())).view({1, 1, L});
    at::Tensor hidden = k > q;                                                                        // [B, T, L]
    // As transformers 4.46 builds Mistral's mask: keys at or before query - window are hidden too.
    if (window_hides) hidden.logical_or_(k <= q - *window);
    return at::zeros({B, 1, T, L}, options)
        .masked_fill_(hidden.unsqueeze(1), mask_value(options.dtype().toScalarType()));
}

at::Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t S, at::TensorOptions options) {
    if (std::all_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n == S; })) return at::Tensor();
    const int64_t B = static_cast<int64_t>(lengths.size());
    at::Tensor len = at::tensor(lengths, at::TensorOptions().dtype(at::kLong)).to(options.device());
    at::Tensor slots = at::arange(S, at::TensorOptions().dtype(at::kLong).device(options.device()));
    at::Tensor hidden = slots.unsqueeze(0) >= len.unsqueeze(1);
    return at::zeros({B, 1, 1, S}, options)
        .masked_fill_(hidden.view({B, 1, 1, S}), mask_value(options.dtype().toScalarType()));
}

}  // namespace lorascope::models
