#include "ops/cpu_gemm.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#if LORASCOPE_WITH_DNNL
#include <dnnl.h>
#endif

namespace lorascope::ops {

namespace {

bool onednn_enabled() {
#if LORASCOPE_WITH_DNNL
    static const bool enabled = [] {
        const char* v = std::getenv("LORASCOPE_CPU_GEMM");
        return !(v && std::strcmp(v, "torch") == 0);
    }();
    return enabled;
#else
    return false;
#endif
}

}  // namespace

bool cpu_packing_disabled() {
    static const bool disabled = [] {
        const char* v = std::getenv("LORASCOPE_CPU_GEMM");
        return v && (std::strcmp(v, "sgemm") == 0 || std::strcmp(v, "torch") == 0);
    }();
    return disabled;
}

const char* cpu_gemm_backend() { return onednn_enabled() ? "onednn" : "aten"; }

bool cpu_gemm_applies(const at::Tensor& x, const at::Tensor& weight) {
    return onednn_enabled() && x.device().is_cpu() && weight.device().is_cpu() && x.scalar_type() == at::kFloat &&
           weight.scalar_type() == at::kFloat && weight.dim() == 2 && weight.is_contiguous() && x.dim() >= 1 &&
           x.size(-1) == weight.size(1);
}

at::Tensor linear_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
#if LORASCOPE_WITH_DNNL
    const int64_t K = weight.size(1), N = weight.size(0);
    // [..., K] as rows of a matrix; a copy only when the rows are not evenly strided.
    at::Tensor x2 = x.reshape({-1, K});
    if (x2.stride(1) != 1 || (x2.size(0) > 1 && x2.stride(0) < K)) x2 = x2.contiguous();
    const int64_t M = x2.size(0);
    std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
    out_shape.back() = N;
    at::Tensor y = at::empty(out_shape, x.options());
    if (M == 0 || N == 0) return y;
    at::Tensor y2 = y.view({M, N});
    float beta = 0.0f;
    if (bias.defined()) {
        // C = x W^T + 1 * C with C preset to the bias: no second pass over the output.
        y2.copy_(bias.to(at::kFloat).expand({M, N}));
        beta = 1.0f;
    }
    const int64_t lda = M > 1 ? x2.stride(0) : K;
    const dnnl_status_t status = dnnl_sgemm('N', 'T', M, N, K, 1.0f, x2.data_ptr<float>(), lda,
                                            weight.data_ptr<float>(), K, beta, y2.data_ptr<float>(), N);
    TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed (status ", static_cast<int>(status), ") for [", M, ", ",
                K, "] x [", N, ", ", K, "]^T");
    return y;
#else
    (void)x;
    (void)weight;
    (void)bias;
    TORCH_CHECK(false, "linear_cpu: this build has no oneDNN");
#endif
}

}  // namespace lorascope::ops
