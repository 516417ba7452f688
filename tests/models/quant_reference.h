// Reference computations for the CPU products' tests (test_cpu_matmul, test_panel_gemm), written
// with ATen operators, independently of the kernels: the quantization schemes and the comparisons.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <tuple>
#include <utility>

namespace lorascope::test {

// Asymmetric per-row quantization of activations: (q as float in [0, 255], scale, min).
inline std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_asym_ref(const at::Tensor& x) {
    at::Tensor mn = x.amin(1, /*keepdim=*/true), range = x.amax(1, true) - mn;
    at::Tensor scale = at::where(range > 0, range / 255.0, at::ones_like(range));
    at::Tensor inv = at::where(range > 0, 255.0 / range, at::zeros_like(range));
    return {at::round((x - mn) * inv).clamp(0, 255), scale, mn};
}

// Per-row symmetric int8 quantization of weights, in [-max, max]: (q as float, scale [rows, 1]).
inline std::pair<at::Tensor, at::Tensor> quantize_ref(const at::Tensor& x, int max = 127) {
    at::Tensor absmax = x.abs().amax(1, /*keepdim=*/true);
    at::Tensor scale = at::where(absmax > 0, absmax / static_cast<float>(max), at::ones_like(absmax));
    at::Tensor inv = at::where(absmax > 0, static_cast<float>(max) / absmax, at::zeros_like(absmax));
    return {at::round(x * inv).clamp(-max, max), scale};  // at::round rounds half to even
}

// The activations as the int8 and 4-bit products see them, in double: q * scale + min.
inline at::Tensor dequantized_activations(const at::Tensor& x) {
    auto [q, s, m] = quantize_asym_ref(x);
    return q.to(at::kDouble) * s.to(at::kDouble) + m.to(at::kDouble);
}

// Each row within `tol` of the row's largest magnitude: products of large rows cancel, so an
// element-wise relative tolerance would demand more than float32 summation gives.
inline bool rows_close(const at::Tensor& got, const at::Tensor& want, double tol) {
    if (got.sizes() != want.sizes()) return false;
    if (got.numel() == 0) return true;
    at::Tensor g = got.reshape({-1, got.size(-1)}).to(at::kDouble), w = want.reshape({-1, want.size(-1)}).to(at::kDouble);
    at::Tensor scale = w.abs().amax(1).clamp_min(1e-12);
    return ((g - w).abs().amax(1) / scale).max().item<double>() <= tol;
}

inline double relative_error(const at::Tensor& got, const at::Tensor& want) {
    return (got - want).norm().item<double>() / std::max(want.norm().item<double>(), 1e-12);
}

// Random activations with an all-zero row (scale 1, every byte 0) and a row far larger than the others.
inline at::Tensor random_input(int64_t M, int64_t K, int64_t seed) {
    at::manual_seed(seed);
    at::Tensor x = at::randn({M, K});
    if (M > 2) x[1].zero_();
    if (M > 2) x[2].mul_(1000.0);
    return x;
}

}  // namespace lorascope::test
