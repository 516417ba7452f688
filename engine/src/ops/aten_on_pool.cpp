#include "ops/aten_on_pool.h"

#include <algorithm>

#include "ops/thread_pool.h"

namespace lorascope::ops {

namespace {

// 32k floats (128 KiB) a chunk: an ATen call costs a few microseconds, the chunk's work ~10x that.
constexpr int64_t kChunk = int64_t{1} << 15;

// fn(begin, end) over [0, n) in chunks of `chunk`, each chunk one call wherever it runs.
void for_fixed_chunks(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
    const int64_t chunks = (n + chunk - 1) / chunk;
    // Autograd's modes are per thread: the workers take the caller's (the engine's tensors are
    // inference tensors, which only inference mode may write).
    const bool inference = c10::InferenceMode::is_enabled(), grad = c10::GradMode::is_enabled();
    parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
        c10::InferenceMode inference_mode(inference);
        c10::AutoGradMode grad_mode(grad);
        for (int64_t c = c0; c < c1; ++c) fn(c * chunk, std::min(n, (c + 1) * chunk));
    });
}

}  // namespace

bool worth_sharing(const at::Tensor& x) {
    return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous() && x.numel() >= 2 * kChunk &&
           pool_threads() > 1;
}

at::Tensor map_elements(const at::Tensor& x, const std::function<void(at::Tensor& out, const at::Tensor& in)>& op) {
    at::Tensor out = at::empty_like(x);
    const at::Tensor flat_in = x.view({-1}), flat_out = out.view({-1});
    for_fixed_chunks(x.numel(), kChunk, [&](int64_t begin, int64_t end) {
        at::Tensor o = flat_out.slice(0, begin, end);
        op(o, flat_in.slice(0, begin, end));
    });
    return out;
}

at::Tensor add_on_pool(const at::Tensor& a, const at::Tensor& b) {
    at::Tensor out = at::empty_like(a);
    const at::Tensor fa = a.view({-1}), fb = b.view({-1}), fo = out.view({-1});
    for_fixed_chunks(a.numel(), kChunk, [&](int64_t begin, int64_t end) {
        at::Tensor o = fo.slice(0, begin, end);
        at::add_out(o, fa.slice(0, begin, end), fb.slice(0, begin, end));
    });
    return out;
}

at::Tensor layer_norm_on_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
    const int64_t d = x.size(-1), rows = x.numel() / d;
    at::Tensor out = at::empty_like(x);
    const at::Tensor in2 = x.view({rows, d}), out2 = out.view({rows, d});
    const int64_t rows_per_chunk = std::max<int64_t>(1, kChunk / d);
    for_fixed_chunks(rows, rows_per_chunk, [&](int64_t begin, int64_t end) {
        at::Tensor o = out2.slice(0, begin, end);
        at::Tensor mean = at::empty({end - begin, 1}, x.options()), rstd = at::empty({end - begin, 1}, x.options());
        at::native_layer_norm_out(o, mean, rstd, in2.slice(0, begin, end), {d}, weight, bias, eps);
    });
    return out;
}

}  // namespace lorascope::ops
