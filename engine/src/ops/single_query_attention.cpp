#include "ops/single_query_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/dot.h"
#include "ops/thread_pool.h"

namespace lorascope::ops {

namespace {

struct Operands {
    const float* q;
    const void* k;     // float, or bfloat16 bits (uint16_t) when kv_bf16
    const void* v;
    const float* bias;  // null: no bias
    int64_t qb, qh, kb, kh, kl, vb, vh, vl, bb, bh, bl;
    int64_t H, L, D;
    float scale;
    bool kv_bf16 = false;
    // Paged operands: row b's position l sits in block table[b * width + l / block] of the pool
    // (kb = vb = 0). Dense operands: no table, one block of L positions per row.
    const int32_t* table = nullptr;
    int64_t width = 1;
    int64_t block = 0;
    int64_t kblock = 0, vblock = 0;  // paged: strides between blocks of the pool
};

// Where (row b, head h)'s run of positions [j * block, (j + 1) * block) starts.
template <typename KV>
inline const KV* run_start(const KV* base, int64_t b, int64_t j, int64_t stride_block, const Operands& o) {
    return o.table ? base + static_cast<int64_t>(o.table[b * o.width + j]) * stride_block : base;  // dense: one run
}

// One (row, head): scores, softmax and the weighted sum of values in one pass over its keys, so that
// each key and value is read once and nothing is allocated. Inlined into attend_one's two builds,
// for AVX2+FMA and for the baseline ISA, picked at run time from the instruction sets in effect
// (ops/cpu_isa.h; the binary still runs on older CPUs). A dot/axpy called per key, with softmax and
// bias as separate passes, took 10-60% longer in a microbenchmark on t5-small and bart-base
// cross-attention shapes.
template <typename KV>
__attribute__((always_inline)) inline void attend_one_kv(const Operands& o, int64_t i, int64_t n, float* scores,
                                                         float* out) {
    const int64_t b = i / o.H, h = i % o.H;
    const float* q = o.q + b * o.qb + h * o.qh;
    const KV* k = static_cast<const KV*>(o.k) + b * o.kb + h * o.kh;
    const KV* v = static_cast<const KV*>(o.v) + b * o.vb + h * o.vh;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0, l0 = 0; l0 < n; ++j, l0 += o.block) {
        const KV* kr = run_start(k, b, j, o.kblock, o);
        const int64_t count = std::min(o.block, n - l0);
        for (int64_t i = 0; i < count; ++i) {
            const int64_t l = l0 + i;
            float s = dot(q, kr + i * o.kl, o.D) * o.scale;
            if (o.bias) s += o.bias[b * o.bb + h * o.bh + l * o.bl];
            scores[l] = s;
            max = std::max(max, s);
        }
    }
    float sum = 0;
    for (int64_t l = 0; l < n; ++l) {
        scores[l] = std::exp(scores[l] - max);
        sum += scores[l];
    }
    const float inv = 1.0f / sum;
    for (int64_t d = 0; d < o.D; ++d) out[d] = 0;
    for (int64_t j = 0, l0 = 0; l0 < n; ++j, l0 += o.block) {
        const KV* vr = run_start(v, b, j, o.vblock, o);
        const int64_t count = std::min(o.block, n - l0);
        for (int64_t i = 0; i < count; ++i) {
            const float p = scores[l0 + i] * inv;
            if (p == 0.0f) continue;  // masked: exp underflowed
            const KV* vl = vr + i * o.vl;
            for (int64_t d = 0; d < o.D; ++d) out[d] += p * widen(vl[d]);
        }
    }
}

void attend_one(const Operands& o, int64_t i, int64_t n, float* scores, float* out) {
    if (o.kv_bf16)
        attend_one_kv<uint16_t>(o, i, n, scores, out);
    else
        attend_one_kv<float>(o, i, n, scores, out);
}

#if LORASCOPE_X86
__attribute__((target("avx2,fma"))) void attend_one_avx2(const Operands& o, int64_t i, int64_t n, float* scores,
                                                          float* out) {
    if (o.kv_bf16)
        attend_one_kv<uint16_t>(o, i, n, scores, out);
    else
        attend_one_kv<float>(o, i, n, scores, out);
}
#endif

}  // namespace

bool single_query_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    for (const at::Tensor* t : {&q, &k, &v})
        if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || t->dim() != 4 || t->stride(3) != 1) return false;
    return q.size(2) == 1 && k.size(2) == v.size(2) && k.size(3) == q.size(3) && v.size(3) == q.size(3) &&
           k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == q.size(1) && v.size(1) == q.size(1);
}

namespace {

// The bias (broadcast with stride 0, never materialised per (row, head)) and the parallel loop
// over (row, head), shared by the dense and the paged entry points.
at::Tensor run(Operands& o, const at::Tensor& q, const at::Tensor& bias, int64_t B, const std::vector<int64_t>* valid) {
    const int64_t H = o.H, L = o.L, D = o.D;
    o.q = q.data_ptr<float>();
    o.qb = q.stride(0), o.qh = q.stride(1);
    at::Tensor bias_view;  // keeps a converted bias alive
    if (bias.defined()) {
        bias_view = bias.to(at::kFloat).expand({B, H, 1, L});
        o.bias = bias_view.data_ptr<float>();
        o.bb = bias_view.stride(0), o.bh = bias_view.stride(1), o.bl = bias_view.stride(3);
    }
    auto keys_to_read = [&](int64_t b) {
        if (!valid) return L;
        const int64_t n = (*valid)[static_cast<size_t>(b)];
        return n >= 1 && n < L ? n : L;  // at least one key, or the softmax of a row would be NaN
    };
    at::Tensor out = at::empty({B, 1, H, D}, q.options());
    float* op = out.data_ptr<float>();
    auto* one = &attend_one;
#if LORASCOPE_X86
    if (cpu_features().avx2) one = &attend_one_avx2;
#endif
    parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> scores(static_cast<size_t>(L));
        for (int64_t i = begin; i < end; ++i)
            one(o, i, keys_to_read(i / H), scores.data(), op + i * D);  // [B, 1, H, D]: (b, h) is row i
    });
    return out.view({B, 1, H * D});
}

}  // namespace

at::Tensor attend_single_query(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                               double score_scale, const std::vector<int64_t>* valid) {
    const int64_t B = q.size(0), H = q.size(1), L = k.size(2), D = q.size(3);
    TORCH_CHECK(!valid || static_cast<int64_t>(valid->size()) == B, "attend_single_query: ", valid ? valid->size() : 0,
                " valid lengths for ", B, " rows");
    Operands o{};
    o.k = k.data_ptr<float>();
    o.v = v.data_ptr<float>();
    o.kb = k.stride(0), o.kh = k.stride(1), o.kl = k.stride(2);
    o.vb = v.stride(0), o.vh = v.stride(1), o.vl = v.stride(2);
    o.H = H, o.L = L, o.D = D;
    o.scale = static_cast<float>(score_scale);
    o.block = std::max<int64_t>(L, 1);
    return run(o, q, bias, B, valid);
}

bool paged_single_query_applies(const at::Tensor& q, const at::Tensor& pool_keys) {
    return q.device().is_cpu() && q.scalar_type() == at::kFloat && q.dim() == 4 && q.size(2) == 1 && q.stride(3) == 1 &&
           pool_keys.device().is_cpu() &&
           (pool_keys.scalar_type() == at::kFloat || pool_keys.scalar_type() == at::kBFloat16) &&
           pool_keys.is_contiguous();
}

at::Tensor attend_single_query_paged(const at::Tensor& q, const at::Tensor& pool_keys, const at::Tensor& pool_values,
                                     const std::vector<int32_t>& table, int64_t width, int64_t block,
                                     const std::vector<int64_t>& valid, int64_t L, const at::Tensor& bias,
                                     double score_scale) {
    const int64_t B = q.size(0), H = q.size(1), D = q.size(3);
    TORCH_CHECK(static_cast<int64_t>(valid.size()) == B && static_cast<int64_t>(table.size()) == B * width,
                "attend_single_query_paged: ", valid.size(), " lengths and a table of ", table.size(), " for ", B, " rows");
    TORCH_CHECK(pool_keys.dim() == 4 && pool_keys.size(1) == H && pool_keys.size(2) == block && pool_keys.size(3) == D &&
                    pool_values.is_contiguous() && pool_values.scalar_type() == pool_keys.scalar_type(),
                "attend_single_query_paged: pool of another shape");
    for (int64_t n : valid)
        TORCH_CHECK(n >= 1 && n <= width * block && n <= L, "attend_single_query_paged: ", n, " keys for a table of ",
                    width, " blocks and ", L, " positions");
    Operands o{};
    o.kv_bf16 = pool_keys.scalar_type() == at::kBFloat16;
    o.k = pool_keys.data_ptr();
    o.v = pool_values.data_ptr();
    o.kb = 0, o.kh = pool_keys.stride(1), o.kl = pool_keys.stride(2), o.kblock = pool_keys.stride(0);
    o.vb = 0, o.vh = pool_values.stride(1), o.vl = pool_values.stride(2), o.vblock = pool_values.stride(0);
    o.H = H, o.L = L, o.D = D;
    o.scale = static_cast<float>(score_scale);
    o.table = table.data();
    o.width = width;
    o.block = block;
    return run(o, q, bias, B, &valid);
}

}  // namespace lorascope::ops
