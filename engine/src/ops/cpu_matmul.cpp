#include "ops/cpu_matmul.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/quantize.h"

#if LORASCOPE_WITH_DNNL
#include <dnnl.hpp>
#endif

namespace lorascope::ops {

const char* matmul_kind_name(MatmulKind kind) {
    switch (kind) {
        case MatmulKind::Float32: return "float32";
        case MatmulKind::Bfloat16: return "bfloat16";
        case MatmulKind::Int8: return "int8";
    }
    return "?";
}

bool cpu_matmul_available(MatmulKind kind, std::string* why) {
    auto no = [&](const char* reason) {
        if (why) *why = reason;
        return false;
    };
#if !LORASCOPE_WITH_DNNL
    (void)kind;
    return no("this build has no oneDNN (it is enabled with a system LibTorch and libdnnl-dev)");
#else
    if (kind == MatmulKind::Bfloat16 && !cpu_has_bf16_dot())
        return no("this CPU has no AVX-512 BF16 (lscpu flag avx512_bf16), so bfloat16 products would run in a slow "
                  "emulation; use float32 or int8");
    if (kind == MatmulKind::Int8 && !cpu_has_int8_dot())
        return no("this CPU has no VNNI (lscpu flag avx512_vnni or avx_vnni), without which int8 products saturate "
                  "16-bit sums; use float32");
    return true;
#endif
}

#if LORASCOPE_WITH_DNNL

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct Runtime {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
};

Runtime& runtime() {
    static Runtime r;
    return r;
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

}  // namespace

struct CpuMatmul::Impl {
    MatmulKind kind;
    int64_t K = 0, N = 0;
    dt src_type = dt::f32, weight_type = dt::f32, dst_type = dt::f32;
    dnnl::memory::desc weights_md;
    at::Tensor packed;       // bytes of the packed weight
    at::Tensor bias;         // [N] float32 or undefined
    at::Tensor col_scale;    // int8: [N]
    at::Tensor col_offset;   // int8: [N] col_scale[n] * sum_k W_q[n, k] (dequantize_s32)
    std::vector<int64_t> k_offset;  // blocked offset of each k (rows())

    mutable std::mutex mutex;
    mutable std::unordered_map<int64_t, std::shared_ptr<const dnnl::matmul>> primitives;  // by row count

    // `weights`: the packed layout once it is chosen; before that, any (oneDNN picks).
    dnnl::matmul::primitive_desc describe(int64_t M, const dnnl::memory::desc* weights_layout = nullptr) const {
        const dnnl::memory::desc src({M, K}, src_type, tag::ab);
        const dnnl::memory::desc weights = weights_layout ? *weights_layout : dnnl::memory::desc({K, N}, weight_type, tag::any);
        const dnnl::memory::desc dst({M, N}, dst_type, tag::ab);
        if (kind != MatmulKind::Int8 && bias.defined()) {
            const dnnl::memory::desc b({1, N}, dt::f32, tag::ab);
            return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, b, dst), runtime().engine);
        }
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), runtime().engine);
    }

    // One primitive per row count, created on first use (~0.1 ms) and kept: decode steps repeat a
    // few row counts; prefill's varied counts are bounded by the cap.
    // Every row count reads the one packed layout, chosen at 32 rows. Left to choose, oneDNN 2.6
    // picks other layouts for other counts on CPUs with AMX (bfloat16 64 x 64 on a Xeon with
    // amx_bf16: AMX's layout for 5-33 rows, AVX-512 BF16's for 1-4 and another for 64 and more);
    // given the packed layout it runs a kernel that reads it (brg:avx512_core_bf16 for 1-4 rows,
    // brg:avx512_core_amx_bf16 above), so no second copy of the weights is needed.
    std::shared_ptr<const dnnl::matmul> primitive(int64_t M) const {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = primitives.find(M);
        if (it != primitives.end()) return it->second;
        if (primitives.size() >= 256) primitives.clear();
        std::optional<dnnl::matmul::primitive_desc> pd;
        try {
            pd = describe(M, &weights_md);
        } catch (const dnnl::error& e) {
            TORCH_CHECK(false, "oneDNN has no ", matmul_kind_name(kind), " matmul for ", M, " rows over the packed ",
                        K, " x ", N, " weight layout (", e.what(), ")");
        }
        auto made = std::make_shared<const dnnl::matmul>(*pd);
        primitives.emplace(M, made);
        return made;
    }
};

CpuMatmul::CpuMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind, const RowsRead& rows_read)
    : impl_(new Impl) {
    std::string why;
    TORCH_CHECK(cpu_matmul_available(kind, &why), matmul_kind_name(kind), " products on the CPU: ", why);
    TORCH_CHECK(weight.dim() == 2 && weight.device().is_cpu(), "CpuMatmul: weight must be a 2-D CPU tensor");
    Impl& m = *impl_;
    m.kind = kind;
    m.N = weight.size(0);
    m.K = weight.size(1);
    if (bias.defined()) m.bias = bias.to(at::kFloat).contiguous();
    if (kind == MatmulKind::Bfloat16) m.src_type = m.weight_type = dt::bf16;
    if (kind == MatmulKind::Int8) {
        m.src_type = dt::u8;
        m.weight_type = dt::s8;
        m.dst_type = dt::s32;
        m.col_scale = at::empty({m.N}, at::kFloat);
        m.col_offset = at::empty({m.N}, at::kFloat);
    }
    m.weights_md = m.describe(32).weights_desc();
    m.packed = at::zeros({static_cast<int64_t>(m.weights_md.get_size())}, at::kByte);  // padding must be zero
    auto& eng = runtime().engine;
    dnnl::stream stream(eng);
    // Blocks of rows (output channels): a multiple of every N blocking oneDNN uses (16, 32, 64), so
    // each block lands in whole blocks of the packed layout (checked equal to one whole reorder).
    constexpr int64_t kRows = 4096;
    for (int64_t n0 = 0; n0 < m.N; n0 += kRows) {
        const int64_t c = std::min(kRows, m.N - n0);
        at::Tensor w = weight.narrow(0, n0, c).to(at::kFloat).contiguous();  // a view for float32 weights
        at::Tensor plain;  // [c, K] in the weight's data type: the "ba" layout of the logical [K, c]
        if (kind == MatmulKind::Float32) {
            plain = w;
        } else if (kind == MatmulKind::Bfloat16) {
            plain = at::empty({c, m.K}, at::kShort);
            to_bf16_rows(w.data_ptr<float>(), c, m.K, m.K, reinterpret_cast<uint16_t*>(plain.data_ptr<int16_t>()));
        } else {
            plain = at::empty({c, m.K}, at::kChar);
            quantize_rows_s8(w.data_ptr<float>(), c, m.K, m.K, plain.data_ptr<int8_t>(),
                             m.col_scale.data_ptr<float>() + n0);
            const int8_t* q = plain.data_ptr<int8_t>();
            const float* scale = m.col_scale.data_ptr<float>() + n0;
            float* offset = m.col_offset.data_ptr<float>() + n0;
            for (int64_t j = 0; j < c; ++j) {
                int32_t sum = 0;
                for (int64_t k = 0; k < m.K; ++k) sum += q[j * m.K + k];
                offset[j] = static_cast<float>(sum) * scale[j];
            }
        }
        dnnl::memory src({{m.K, c}, m.weight_type, tag::ba}, eng, plain.data_ptr());
        // A full block's place in the packed buffer goes in as a pointer, not as submemory offsets:
        // every full block then has the same descriptor and reuses one reorder. (Offsets made each
        // block a new primitive, and oneDNN's primitive cache kept ~4 MB per block: +217 MB for
        // BLOOM's int8 head.) A last, partial block must be given by its offset (oneDNN accepts a
        // partial block only where it ends the matrix).
        const bool full = c == kRows;
        const int64_t elem = static_cast<int64_t>(dnnl::memory::data_type_size(m.weight_type));
        uint8_t* base = m.packed.data_ptr<uint8_t>() + (full ? blocked_offset(m.weights_md.data, 1, n0) * elem : 0);
        dnnl::memory dst(m.weights_md.submemory_desc({m.K, c}, {0, full ? 0 : n0}), eng, base);
        dnnl::reorder(src, dst).execute(stream, src, dst);
        stream.wait();
        if (rows_read) rows_read(n0, n0 + c);
    }
    m.k_offset.resize(static_cast<size_t>(m.K));
    for (int64_t k = 0; k < m.K; ++k) m.k_offset[static_cast<size_t>(k)] = blocked_offset(m.weights_md.data, 0, k);
}

CpuMatmul::~CpuMatmul() = default;

MatmulKind CpuMatmul::kind() const { return impl_->kind; }
int64_t CpuMatmul::in_features() const { return impl_->K; }
int64_t CpuMatmul::out_features() const { return impl_->N; }
int64_t CpuMatmul::bytes() const {
    const Impl& m = *impl_;
    int64_t n = m.packed.nbytes();
    if (m.col_scale.defined()) n += m.col_scale.nbytes() + m.col_offset.nbytes();
    return n;
}

at::Tensor CpuMatmul::forward(const at::Tensor& x) const {
    const Impl& m = *impl_;
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.size(-1) == m.K,
                "CpuMatmul: expected a float32 CPU input [..., ", m.K, "], got ", x.sizes(), " ", x.scalar_type());
    at::Tensor x2 = x.reshape({-1, m.K});
    if (!x2.is_contiguous()) x2 = x2.contiguous();
    const int64_t M = x2.size(0);
    std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end());
    out_shape.back() = m.N;
    at::Tensor y = at::empty(out_shape, x.options());
    if (M == 0 || m.N == 0) return y;
    if (m.K == 0) return m.bias.defined() ? y.copy_(m.bias.expand_as(y)) : y.zero_();

    auto& eng = runtime().engine;
    const std::shared_ptr<const dnnl::matmul> prim = m.primitive(M);
    at::Tensor src_buffer, row_scale, row_min;
    void* src_ptr = x2.data_ptr();
    if (m.kind == MatmulKind::Int8) {
        src_buffer = at::empty({M, m.K}, at::kByte);
        row_scale = at::empty({M}, at::kFloat);
        row_min = at::empty({M}, at::kFloat);
        quantize_rows_u8(x2.data_ptr<float>(), M, m.K, m.K, src_buffer.data_ptr<uint8_t>(), row_scale.data_ptr<float>(),
                         row_min.data_ptr<float>());
        src_ptr = src_buffer.data_ptr();
    } else if (m.kind == MatmulKind::Bfloat16) {
        src_buffer = at::empty({M, m.K}, at::kShort);
        to_bf16_rows(x2.data_ptr<float>(), M, m.K, m.K, reinterpret_cast<uint16_t*>(src_buffer.data_ptr<int16_t>()));
        src_ptr = src_buffer.data_ptr();
    }
    dnnl::memory src({{M, m.K}, m.src_type, tag::ab}, eng, src_ptr);
    dnnl::memory weights(m.weights_md, eng, m.packed.data_ptr());
    dnnl::memory dst({{M, m.N}, m.dst_type, tag::ab}, eng, y.data_ptr());  // int8: int32 sums, rescaled in place
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (m.kind != MatmulKind::Int8 && m.bias.defined())
        args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, m.N}, dt::f32, tag::ab}, eng, m.bias.data_ptr()));
    thread_local dnnl::stream stream(eng);
    prim->execute(stream, args);
    stream.wait();
    if (m.kind == MatmulKind::Int8)
        dequantize_s32(reinterpret_cast<const int32_t*>(y.data_ptr<float>()), M, m.N, row_scale.data_ptr<float>(),
                       row_min.data_ptr<float>(), m.col_scale.data_ptr<float>(), m.col_offset.data_ptr<float>(),
                       m.bias.defined() ? m.bias.data_ptr<float>() : nullptr, y.data_ptr<float>());
    return y;
}

at::Tensor CpuMatmul::rows(const at::Tensor& ids) const {
    const Impl& m = *impl_;
    at::Tensor flat = ids.reshape({-1}).to(at::kLong).contiguous();
    const int64_t n = flat.size(0);
    at::Tensor out = at::empty({n, m.K}, at::kFloat);
    const int64_t* id = flat.data_ptr<int64_t>();
    const uint8_t* base = m.packed.data_ptr<uint8_t>();
    float* o = out.data_ptr<float>();
    for (int64_t t = 0; t < n; ++t) {
        TORCH_CHECK(id[t] >= 0 && id[t] < m.N, "token id ", id[t], " is outside the embedding table of ", m.N, " rows");
        const int64_t col = blocked_offset(m.weights_md.data, 1, id[t]);
        float* row = o + t * m.K;
        if (m.kind == MatmulKind::Int8) {
            const auto* w = reinterpret_cast<const int8_t*>(base);
            const float s = m.col_scale.data_ptr<float>()[id[t]];
            for (int64_t k = 0; k < m.K; ++k) row[k] = static_cast<float>(w[m.k_offset[k] + col]) * s;
        } else if (m.kind == MatmulKind::Bfloat16) {
            const auto* w = reinterpret_cast<const uint16_t*>(base);
            for (int64_t k = 0; k < m.K; ++k) {
                const uint32_t bits = static_cast<uint32_t>(w[m.k_offset[k] + col]) << 16;
                std::memcpy(row + k, &bits, sizeof(float));
            }
        } else {
            const auto* w = reinterpret_cast<const float*>(base);
            for (int64_t k = 0; k < m.K; ++k) row[k] = w[m.k_offset[k] + col];
        }
    }
    std::vector<int64_t> shape(ids.sizes().begin(), ids.sizes().end());
    shape.push_back(m.K);
    return out.view(shape);
}

#else  // no oneDNN

struct CpuMatmul::Impl {
    MatmulKind kind;
};
CpuMatmul::CpuMatmul(const at::Tensor&, const at::Tensor&, MatmulKind kind, const RowsRead&) : impl_(new Impl{kind}) {
    std::string why;
    cpu_matmul_available(kind, &why);
    TORCH_CHECK(false, matmul_kind_name(kind), " products on the CPU: ", why);
}
CpuMatmul::~CpuMatmul() = default;
MatmulKind CpuMatmul::kind() const { return impl_->kind; }
int64_t CpuMatmul::in_features() const { return 0; }
int64_t CpuMatmul::out_features() const { return 0; }
int64_t CpuMatmul::bytes() const { return 0; }
at::Tensor CpuMatmul::forward(const at::Tensor&) const { TORCH_CHECK(false, "CpuMatmul: no oneDNN"); }
at::Tensor CpuMatmul::rows(const at::Tensor&) const { TORCH_CHECK(false, "CpuMatmul: no oneDNN"); }

#endif

}  // namespace lorascope::ops
