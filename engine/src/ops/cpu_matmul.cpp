#include "ops/cpu_matmul.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/matmul_backend.h"
#include "ops/panel_gemm.h"

namespace lorascope::ops {

namespace {

enum class Backend { Onednn, Panel };

bool have_onednn() {
#if LORASCOPE_WITH_DNNL
    return true;
#else
    return false;
#endif
}

// oneDNN where it has a fast kernel for `kind` under the instruction sets in effect, our panel
// kernels elsewhere; LORASCOPE_CPU_MATMUL=onednn|panel picks one where both can run `kind`.
Backend backend_for(MatmulKind kind) {
    if (kind == MatmulKind::Int4 || !have_onednn()) return Backend::Panel;
    static const char* forced = std::getenv("LORASCOPE_CPU_MATMUL");
    if (forced && std::strcmp(forced, "panel") == 0) return Backend::Panel;
    if (forced && std::strcmp(forced, "onednn") == 0) return Backend::Onednn;
    // float32 on our kernels everywhere: as fast as oneDNN's packed sgemm and, on our pool, results
    // that do not depend on the thread count, so the count can follow the machine's load (issue 28).
    // On the 2-core Zen 4, W1 in float32, three runs each: 990-1030 tokens/s against oneDNN's
    // 1004-1024, 8.2-8.5 CPU seconds against 8.7-8.8.
    if (kind == MatmulKind::Float32) return Backend::Panel;
    // int8 too, since its AVX-512 VNNI tile runs at oneDNN's speed (panel_gemm_x86.cpp) and the
    // ATen work beside it runs on our pool (ops/aten_on_pool.h): on the 2-core Zen 4, W1/W2/W3 at
    // 1.03x/1.00x/0.99x the build before issue 28 (oneDNN's), and beside a busy loop W1 keeps
    // 0.73x of its quiet speed where oneDNN in ATen's OpenMP team kept 0.32x (docs/benchmarks.md).
    if (kind == MatmulKind::Int8) return Backend::Panel;
    return cpu_features().avx512_bf16 ? Backend::Onednn : Backend::Panel;
}

}  // namespace

bool cpu_matmul_runs_on_pool(MatmulKind kind) { return backend_for(kind) == Backend::Panel; }

const char* matmul_kind_name(MatmulKind kind) {
    switch (kind) {
        case MatmulKind::Float32: return "float32";
        case MatmulKind::Bfloat16: return "bfloat16";
        case MatmulKind::Int8: return "int8";
        case MatmulKind::Int4: return "int4";
    }
    return "?";
}

std::string cpu_matmul_description(MatmulKind kind) {
    if (backend_for(kind) == Backend::Onednn) {
        const std::string isa = std::string(", ") + cpu_isa_name(cpu_isa()) + ")";
        switch (kind) {
            case MatmulKind::Float32: return "float32 weights packed at load, float32 products (oneDNN" + isa;
            case MatmulKind::Bfloat16:
                return "bfloat16 weights and activations, products summed in float32 (oneDNN, AVX-512 BF16" + isa;
            default: return "int8 weights per output channel, activations per row, int32 sums (oneDNN, VNNI" + isa;
        }
    }
    const panel::Kernel best = panel::best_kernel(panel_format(kind));
    const std::string kernels = std::string(" (our ") + panel::kernel_name(best) + " kernels" +
                                (best == panel::Kernel::Amx ? ", avx512_vnni for a few rows)" : ")");
    switch (kind) {
        case MatmulKind::Float32: return "float32 weights packed at load, float32 products" + kernels;
        case MatmulKind::Bfloat16: return "bfloat16 weights times float32 activations, summed in float32" + kernels;
        case MatmulKind::Int8: return "int8 weights per output channel, activations per row, int32 sums" + kernels;
        default:
            return "4-bit weights in groups of 32 with a float16 scale (the LM head and embeddings int8), activations "
                   "int8 per row, int32 sums per group" + kernels;
    }
}

CpuMatmul::CpuMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind, const RowsRead& rows_read,
                     bool full_int8)
    : kind_(kind) {
    TORCH_CHECK(weight.dim() == 2 && weight.device().is_cpu(), "CpuMatmul: weight must be a 2-D CPU tensor");
    N_ = weight.size(0);
    K_ = weight.size(1);
    cpu_isa();  // the instruction-set cap reaches oneDNN before its first primitive
    if (K_ == 0 && bias.defined()) empty_bias_ = bias.to(at::kFloat).contiguous();
    backend_ = backend_for(kind) == Backend::Onednn ? make_onednn_matmul(weight, bias, kind, rows_read)
                                                    : make_panel_matmul(weight, bias, kind, rows_read, full_int8);
}

CpuMatmul::~CpuMatmul() = default;

MatmulKind CpuMatmul::kind() const { return kind_; }
int64_t CpuMatmul::in_features() const { return K_; }
int64_t CpuMatmul::out_features() const { return N_; }
int64_t CpuMatmul::bytes() const { return backend_->bytes(); }
std::string CpuMatmul::backend() const { return backend_->name(); }
int CpuMatmul::int8_weight_max() const { return backend_->int8_weight_max(); }

at::Tensor CpuMatmul::forward(const at::Tensor& x) const {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.size(-1) == K_,
                "CpuMatmul: expected a float32 CPU input [..., ", K_, "], got ", x.sizes(), " ", x.scalar_type());
    at::Tensor x2 = x.reshape({-1, K_});
    if (!x2.is_contiguous()) x2 = x2.contiguous();
    const int64_t M = x2.size(0);
    std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
    out_shape.back() = N_;
    at::Tensor y = at::empty(out_shape, x.options());
    if (M == 0 || N_ == 0) return y;
    if (K_ == 0) return empty_bias_.defined() ? y.copy_(empty_bias_.expand_as(y)) : y.zero_();
    backend_->forward(x2.data_ptr<float>(), M, y.data_ptr<float>());
    return y;
}

at::Tensor CpuMatmul::rows(const at::Tensor& ids) const {
    at::Tensor flat = ids.reshape({-1}).to(at::kLong).contiguous();
    const int64_t n = flat.size(0);
    at::Tensor out = at::empty({n, K_}, at::kFloat);
    const int64_t* id = flat.data_ptr<int64_t>();
    for (int64_t t = 0; t < n; ++t) {
        TORCH_CHECK(id[t] >= 0 && id[t] < N_, "token id ", id[t], " is outside the embedding table of ", N_, " rows");
        backend_->row(id[t], out.data_ptr<float>() + t * K_);
    }
    std::vector<int64_t> shape(ids.sizes().begin(), ids.sizes().end());
    shape.push_back(K_);
    return out.view(shape);
}

}  // namespace lorascope::ops
