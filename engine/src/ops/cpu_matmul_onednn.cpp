// CpuMatmul's oneDNN backend: the weight packed once, at load, in oneDNN's preferred layout, and a
// matmul primitive per row count over it.
//
// Why packed: oneDNN's sgemm (ops/cpu_gemm.h) re-packs W on every call. On this project's AMD EPYC
// (AVX-512, 2 threads) a t5-small decode product at 32 rows, [32, 512] x [512, 2048], took 485 us
// through sgemm and 141 us through a matmul primitive over the pre-packed weight; the int8 product
// (u8 x s8 -> s32, VNNI brgemm) took 34 us and bfloat16 70 us (/tmp microbench, oneDNN 2.6.3;
// docs/benchmarks.md has the model-level figures).
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ops/matmul_backend.h"
#include "ops/quantize.h"

#if LORASCOPE_WITH_DNNL
#include <dnnl.hpp>
#endif

namespace lorascope::ops {

#if LORASCOPE_WITH_DNNL

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine() {
    static dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    return engine;
}

// Offset of index `idx` along dimension `dim` in a blocked oneDNN layout. Blocked offsets are a sum
// of one term per dimension, so a row's offsets are one table plus a per-column term.
int64_t blocked_offset(const dnnl_memory_desc_t& md, int dim, int64_t idx) {
    const auto& b = md.format_desc.blocking;
    int64_t block = 1;
    for (int j = 0; j < b.inner_nblks; ++j)
        if (b.inner_idxs[j] == dim) block *= b.inner_blks[j];
    int64_t off = (idx / block) * b.strides[dim];
    int64_t rem = idx % block, inner_stride = 1;
    for (int j = b.inner_nblks - 1; j >= 0; --j) {
        if (b.inner_idxs[j] == dim) {
            off += (rem % b.inner_blks[j]) * inner_stride;
            rem /= b.inner_blks[j];
        }
        inner_stride *= b.inner_blks[j];
    }
    return off;
}

class OnednnMatmul : public MatmulBackend {
public:
    OnednnMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind, const CpuMatmul::RowsRead& rows_read);
    void forward(const float* x, int64_t M, float* y) const override;
    void row(int64_t n, float* out) const override;
    int64_t bytes() const override {
        int64_t n = packed_.nbytes();
        if (col_scale_.defined()) n += col_scale_.nbytes() + col_offset_.nbytes();
        return n;
    }
    std::string name() const override { return "onednn"; }

private:
    // `weights`: the packed layout once it is chosen; before that, any (oneDNN picks).
    dnnl::matmul::primitive_desc describe(int64_t M, const dnnl::memory::desc* weights_layout = nullptr) const;
    std::shared_ptr<const dnnl::matmul> primitive(int64_t M) const;
    void pack_block(const at::Tensor& weight, int64_t n0, int64_t c, dnnl::stream& stream);

    MatmulKind kind_;
    int64_t K_ = 0, N_ = 0;
    dt src_type_ = dt::f32, weight_type_ = dt::f32, dst_type_ = dt::f32;
    dnnl::memory::desc weights_md_;
    at::Tensor packed_;      // bytes of the packed weight
    at::Tensor bias_;        // [N] float32 or undefined
    at::Tensor col_scale_;   // int8: [N]
    at::Tensor col_offset_;  // int8: [N] col_scale[n] * sum_k W_q[n, k] (dequantize_s32)
    std::vector<int64_t> k_offset_;  // blocked offset of each k (row())

    mutable std::mutex mutex_;
    mutable std::unordered_map<int64_t, std::shared_ptr<const dnnl::matmul>> primitives_;  // by row count
};

dnnl::matmul::primitive_desc OnednnMatmul::describe(int64_t M, const dnnl::memory::desc* weights_layout) const {
    const dnnl::memory::desc src({M, K_}, src_type_, tag::ab);
    const dnnl::memory::desc weights = weights_layout ? *weights_layout : dnnl::memory::desc({K_, N_}, weight_type_, tag::any);
    const dnnl::memory::desc dst({M, N_}, dst_type_, tag::ab);
    if (kind_ != MatmulKind::Int8 && bias_.defined()) {
        const dnnl::memory::desc b({1, N_}, dt::f32, tag::ab);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, b, dst), cpu_engine());
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), cpu_engine());
}

// One primitive per row count, created on first use (~0.1 ms) and kept: decode steps repeat a
// few row counts; prefill's varied counts are bounded by the cap.
// Every row count reads the one packed layout, chosen at 32 rows. Left to choose, oneDNN 2.6
// picks other layouts for other counts on CPUs with AMX (bfloat16 64 x 64 on a Xeon with
// amx_bf16: AMX's layout for 5-33 rows, AVX-512 BF16's for 1-4 and another for 64 and more);
// given the packed layout it runs a kernel that reads it (brg:avx512_core_bf16 for 1-4 rows,
// brg:avx512_core_amx_bf16 above), so no second copy of the weights is needed.
std::shared_ptr<const dnnl::matmul> OnednnMatmul::primitive(int64_t M) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = primitives_.find(M);
    if (it != primitives_.end()) return it->second;
    if (primitives_.size() >= 256) primitives_.clear();
    std::optional<dnnl::matmul::primitive_desc> pd;
    try {
        pd = describe(M, &weights_md_);
    } catch (const dnnl::error& e) {
        TORCH_CHECK(false, "oneDNN has no ", matmul_kind_name(kind_), " matmul for ", M, " rows over the packed ", K_,
                    " x ", N_, " weight layout (", e.what(), ")");
    }
    auto made = std::make_shared<const dnnl::matmul>(*pd);
    primitives_.emplace(M, made);
    return made;
}

OnednnMatmul::OnednnMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind,
                           const CpuMatmul::RowsRead& rows_read)
    : kind_(kind), K_(weight.size(1)), N_(weight.size(0)) {
    if (bias.defined()) bias_ = bias.to(at::kFloat).contiguous();
    if (kind == MatmulKind::Bfloat16) src_type_ = weight_type_ = dt::bf16;
    if (kind == MatmulKind::Int8) {
        src_type_ = dt::u8;
        weight_type_ = dt::s8;
        dst_type_ = dt::s32;
        col_scale_ = at::empty({N_}, at::kFloat);
        col_offset_ = at::empty({N_}, at::kFloat);
    }
    weights_md_ = describe(32).weights_desc();
    packed_ = at::zeros({static_cast<int64_t>(weights_md_.get_size())}, at::kByte);  // padding must be zero
    dnnl::stream stream(cpu_engine());
    for (int64_t n0 = 0; n0 < N_; n0 += kPackRows) {
        const int64_t c = std::min(kPackRows, N_ - n0);
        pack_block(weight, n0, c, stream);
        if (rows_read) rows_read(n0, n0 + c);
    }
    k_offset_.resize(static_cast<size_t>(K_));
    for (int64_t k = 0; k < K_; ++k) k_offset_[static_cast<size_t>(k)] = blocked_offset(weights_md_.data, 0, k);
}

void OnednnMatmul::pack_block(const at::Tensor& weight, int64_t n0, int64_t c, dnnl::stream& stream) {
    at::Tensor w = weight.narrow(0, n0, c).to(at::kFloat).contiguous();  // a view for float32 weights
    at::Tensor plain;  // [c, K] in the weight's data type: the "ba" layout of the logical [K, c]
    if (kind_ == MatmulKind::Float32) {
        plain = w;
    } else if (kind_ == MatmulKind::Bfloat16) {
        plain = at::empty({c, K_}, at::kShort);
        to_bf16_rows(w.data_ptr<float>(), c, K_, K_, reinterpret_cast<uint16_t*>(plain.data_ptr<int16_t>()));
    } else {
        plain = at::empty({c, K_}, at::kChar);
        quantize_rows_s8(w.data_ptr<float>(), c, K_, K_, plain.data_ptr<int8_t>(), col_scale_.data_ptr<float>() + n0);
        const int8_t* q = plain.data_ptr<int8_t>();
        const float* scale = col_scale_.data_ptr<float>() + n0;
        float* offset = col_offset_.data_ptr<float>() + n0;
        for (int64_t j = 0; j < c; ++j) {
            int32_t sum = 0;
            for (int64_t k = 0; k < K_; ++k) sum += q[j * K_ + k];
            offset[j] = static_cast<float>(sum) * scale[j];
        }
    }
    auto& eng = cpu_engine();
    dnnl::memory src({{K_, c}, weight_type_, tag::ba}, eng, plain.data_ptr());
    // A full block's place in the packed buffer goes in as a pointer, not as submemory offsets:
    // every full block then has the same descriptor and reuses one reorder. (Offsets made each
    // block a new primitive, and oneDNN's primitive cache kept ~4 MB per block: +217 MB for
    // BLOOM's int8 head.) A last, partial block must be given by its offset (oneDNN accepts a
    // partial block only where it ends the matrix).
    const bool full = c == kPackRows;
    const int64_t elem = static_cast<int64_t>(dnnl::memory::data_type_size(weight_type_));
    uint8_t* base = packed_.data_ptr<uint8_t>() + (full ? blocked_offset(weights_md_.data, 1, n0) * elem : 0);
    dnnl::memory dst(weights_md_.submemory_desc({K_, c}, {0, full ? 0 : n0}), eng, base);
    dnnl::reorder(src, dst).execute(stream, src, dst);
    stream.wait();
}

void OnednnMatmul::forward(const float* x, int64_t M, float* y) const {
    auto& eng = cpu_engine();
    const std::shared_ptr<const dnnl::matmul> prim = primitive(M);
    at::Tensor src_buffer, row_scale, row_min;
    const void* src_ptr = x;
    if (kind_ == MatmulKind::Int8) {
        src_buffer = at::empty({M, K_}, at::kByte);
        row_scale = at::empty({M}, at::kFloat);
        row_min = at::empty({M}, at::kFloat);
        quantize_rows_u8(x, M, K_, K_, src_buffer.data_ptr<uint8_t>(), row_scale.data_ptr<float>(),
                         row_min.data_ptr<float>());
        src_ptr = src_buffer.data_ptr();
    } else if (kind_ == MatmulKind::Bfloat16) {
        src_buffer = at::empty({M, K_}, at::kShort);
        to_bf16_rows(x, M, K_, K_, reinterpret_cast<uint16_t*>(src_buffer.data_ptr<int16_t>()));
        src_ptr = src_buffer.data_ptr();
    }
    dnnl::memory src({{M, K_}, src_type_, tag::ab}, eng, const_cast<void*>(src_ptr));
    dnnl::memory weights(weights_md_, eng, packed_.data_ptr());
    dnnl::memory dst({{M, N_}, dst_type_, tag::ab}, eng, y);  // int8: int32 sums, rescaled in place
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (kind_ != MatmulKind::Int8 && bias_.defined())
        args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, N_}, dt::f32, tag::ab}, eng, bias_.data_ptr()));
    thread_local dnnl::stream stream(eng);
    prim->execute(stream, args);
    stream.wait();
    if (kind_ == MatmulKind::Int8)
        dequantize_s32(reinterpret_cast<const int32_t*>(y), M, N_, row_scale.data_ptr<float>(), row_min.data_ptr<float>(),
                       col_scale_.data_ptr<float>(), col_offset_.data_ptr<float>(),
                       bias_.defined() ? bias_.data_ptr<float>() : nullptr, y);
}

void OnednnMatmul::row(int64_t n, float* out) const {
    const uint8_t* base = packed_.data_ptr<uint8_t>();
    const int64_t col = blocked_offset(weights_md_.data, 1, n);
    if (kind_ == MatmulKind::Int8) {
        const auto* w = reinterpret_cast<const int8_t*>(base);
        const float s = col_scale_.data_ptr<float>()[n];
        for (int64_t k = 0; k < K_; ++k) out[k] = static_cast<float>(w[k_offset_[k] + col]) * s;
    } else if (kind_ == MatmulKind::Bfloat16) {
        const auto* w = reinterpret_cast<const uint16_t*>(base);
        for (int64_t k = 0; k < K_; ++k) {
            const uint32_t bits = static_cast<uint32_t>(w[k_offset_[k] + col]) << 16;
            std::memcpy(out + k, &bits, sizeof(float));
        }
    } else {
        const auto* w = reinterpret_cast<const float*>(base);
        for (int64_t k = 0; k < K_; ++k) out[k] = w[k_offset_[k] + col];
    }
}

}  // namespace

std::unique_ptr<MatmulBackend> make_onednn_matmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind,
                                                  const CpuMatmul::RowsRead& rows_read) {
    return std::make_unique<OnednnMatmul>(weight, bias, kind, rows_read);
}

#else  // no oneDNN

std::unique_ptr<MatmulBackend> make_onednn_matmul(const at::Tensor&, const at::Tensor&, MatmulKind kind,
                                                  const CpuMatmul::RowsRead&) {
    TORCH_CHECK(false, matmul_kind_name(kind), " products through oneDNN: this build has no oneDNN");
}

#endif

}  // namespace lorascope::ops
