#include "ops/single_query_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/dot.h"
#include "ops/thread_pool.h"

#if LORASCOPE_X86
#include <immintrin.h>
#endif

namespace lorascope::ops {

namespace {

struct Operands {
    const float* q;
    const void* k;     // float, or bfloat16 bits (uint16_t) when kv_bf16
    const void* v;
    const float* bias;  // null: no bias
    int64_t qb, qh, kb, kh, kl, vb, vh, vl, bb, bh, bl;
    int64_t H, L, D;
    int64_t group = 1;  // query heads per key/value head: K/V hold H / group heads
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

// Brings a row of `bytes` into the cache ahead of its use.
__attribute__((always_inline)) inline void prefetch_row(const void* p, int64_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (int64_t at = 0; at < bytes; at += 64) __builtin_prefetch(c + at, 0, 3);
}

// How many positions ahead the key pass prefetches its keys. The cache's rows are read once a
// step and no longer fit the caches (W1's 32 rows: ~37 MB of bfloat16 keys and values a step), and
// 30% of the attention's samples sat on the key loads (`perf annotate`, W1 int8 on the Xeon).
constexpr int64_t kKeysAhead = 8;

// (Row b, key/value head hk)'s keys: where its first run starts (paged: offsets within a block).
template <typename KV>
inline const KV* head_keys(const Operands& o, int64_t b, int64_t hk) {
    return static_cast<const KV*>(o.k) + b * o.kb + hk * o.kh;
}

// Key position l of row b, `k` its head's keys: the position's block run, then its row in it.
template <typename KV>
inline const KV* key_at(const Operands& o, const KV* k, int64_t b, int64_t l) {
    return run_start(k, b, l / o.block, o.kblock, o) + (l % o.block) * o.kl;
}

#if LORASCOPE_X86
// dot() of a bfloat16 key, summed as dot() sums it (eight partial sums, FMA-contracted in the AVX2
// build, the tail first, then the partials in order), with the eight partials one 256-bit vector:
// GCC vectorised dot()'s bfloat16 loop as two 128-bit halves, seven instructions per eight of the
// key's elements where this takes three (attention's samples against the int8 product's, W1 held
// to AVX2: 0.133 -> 0.125). The same bits as the float32 cache's dot() at head size 64
// (paged_attention_reads_a_bfloat16_cache_exactly).
// Not always_inline: key_dot, which calls it, is built for the baseline too; GCC inlines it into
// attend_one_avx2 once key_dot is (no call there, objdump).
__attribute__((target("avx2,fma"))) inline float dot_bf16_avx2(const float* a, const uint16_t* b, int64_t n) {
    __m256 partial = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
        const __m256 wide = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16));
        partial = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), wide, partial);
    }
    float sum = 0;
    for (; i < n; ++i) sum += a[i] * widen(b[i]);
    alignas(32) float parts[8];
    _mm256_store_ps(parts, partial);
    for (float p : parts) sum += p;
    return sum;
}
#endif

// A query row against a key: dot(), or its 256-bit form for bfloat16 keys in the AVX2 build.
template <typename KV, bool kAvx2>
__attribute__((always_inline)) inline float key_dot(const float* q, const KV* key, int64_t n) {
#if LORASCOPE_X86
    if constexpr (kAvx2 && std::is_same_v<KV, uint16_t>) return dot_bf16_avx2(q, key, n);
#endif
    return dot(q, key, n);
}

// One (row, key/value head) and the `group` query heads that share it (grouped-query attention; 1
// otherwise): scores, softmax and the weighted sum of values in one pass over its keys, so that each
// key and value is read once for the whole group and nothing is allocated. Per query head the
// arithmetic and its order are those of one head alone. Inlined into attend_one's two builds,
// for AVX2+FMA and for the baseline ISA, picked at run time from the instruction sets in effect
// (ops/cpu_isa.h; the binary still runs on older CPUs). A cloned dot/axpy called per key, with softmax and bias as separate passes, took
// 10-60% longer in a microbenchmark on t5-small and bart-base cross-attention shapes.
// `scores` holds group * n scores, then group maxima and group reciprocal sums. kOneHead: the group
// is 1 (every family but the Llama family's GQA), known at compile time so that its loops vanish.
template <typename KV, bool kOneHead, bool kAvx2>
__attribute__((always_inline)) inline void attend_one_kv(const Operands& o, int64_t i, int64_t n, float* scores,
                                                         float* out) {
    const int64_t G = kOneHead ? 1 : o.group, kv_heads = o.H / G;
    const int64_t b = i / kv_heads, hk = i % kv_heads;
    const KV* k = head_keys<KV>(o, b, hk);
    const KV* v = static_cast<const KV*>(o.v) + b * o.vb + hk * o.vh;
    float* max = scores + G * n;
    float* inv = max + G;
    for (int64_t g = 0; g < G; ++g) max[g] = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0, l0 = 0; l0 < n; ++j, l0 += o.block) {
        const KV* kr = run_start(k, b, j, o.kblock, o);
        const KV* vr = run_start(v, b, j, o.vblock, o);
        const int64_t count = std::min(o.block, n - l0);
        for (int64_t t = 0; t < count; ++t) {
            const int64_t l = l0 + t;
            const KV* key = kr + t * o.kl;
            // The value rows the second pass reads, a key pass ahead: a paged cache's values sit in
            // another pool, block by block, where the hardware prefetcher does not follow.
            prefetch_row(vr + t * o.vl, o.D * static_cast<int64_t>(sizeof(KV)));
            if (l + kKeysAhead < n) prefetch_row(key_at(o, k, b, l + kKeysAhead), o.D * static_cast<int64_t>(sizeof(KV)));
            for (int64_t g = 0; g < G; ++g) {
                const int64_t h = hk * G + g;
                float s = key_dot<KV, kAvx2>(o.q + b * o.qb + h * o.qh, key, o.D) * o.scale;
                if (o.bias) s += o.bias[b * o.bb + h * o.bh + l * o.bl];
                scores[g * n + l] = s;
                max[g] = std::max(max[g], s);
            }
        }
    }
    for (int64_t g = 0; g < G; ++g) {
        float* row = scores + g * n;
        float sum = 0;
        for (int64_t l = 0; l < n; ++l) {
            row[l] = std::exp(row[l] - max[g]);
            sum += row[l];
        }
        inv[g] = 1.0f / sum;
    }
    for (int64_t d = 0; d < G * o.D; ++d) out[d] = 0;
    for (int64_t j = 0, l0 = 0; l0 < n; ++j, l0 += o.block) {
        const KV* vr = run_start(v, b, j, o.vblock, o);
        const int64_t count = std::min(o.block, n - l0);
        for (int64_t t = 0; t < count; ++t) {
            const KV* vl = vr + t * o.vl;
            for (int64_t g = 0; g < G; ++g) {
                const float p = scores[g * n + l0 + t] * inv[g];
                if (p == 0.0f) continue;  // masked: exp underflowed
                float* og = out + g * o.D;
                for (int64_t d = 0; d < o.D; ++d) og[d] += p * widen(vl[d]);
            }
        }
    }
}

template <bool kAvx2>
__attribute__((always_inline)) inline void attend_one_any(const Operands& o, int64_t i, int64_t n, float* scores,
                                                         float* out) {
    const bool one = o.group == 1;
    if (o.kv_bf16)
        one ? attend_one_kv<uint16_t, true, kAvx2>(o, i, n, scores, out)
            : attend_one_kv<uint16_t, false, kAvx2>(o, i, n, scores, out);
    else
        one ? attend_one_kv<float, true, kAvx2>(o, i, n, scores, out) : attend_one_kv<float, false, kAvx2>(o, i, n, scores, out);
}

// The first keys of (row, key/value head) i, while the one before it computes.
template <typename KV>
void prefetch_first_keys(const Operands& o, int64_t b, int64_t hk, int64_t n) {
    const KV* k = head_keys<KV>(o, b, hk);
    for (int64_t l = 0; l < std::min(n, kKeysAhead); ++l)
        prefetch_row(key_at(o, k, b, l), o.D * static_cast<int64_t>(sizeof(KV)));
}

void prefetch_first_keys(const Operands& o, int64_t i, int64_t n) {
    const int64_t kv_heads = o.H / o.group, b = i / kv_heads, hk = i % kv_heads;
    o.kv_bf16 ? prefetch_first_keys<uint16_t>(o, b, hk, n) : prefetch_first_keys<float>(o, b, hk, n);
}

void attend_one(const Operands& o, int64_t i, int64_t n, float* scores, float* out) {
    attend_one_any<false>(o, i, n, scores, out);
}

#if LORASCOPE_X86
__attribute__((target("avx2,fma"))) void attend_one_avx2(const Operands& o, int64_t i, int64_t n, float* scores,
                                                          float* out) {
    attend_one_any<true>(o, i, n, scores, out);
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
    const int64_t G = o.group, kv_heads = H / G;
    at::Tensor out = at::empty({B, 1, H, D}, q.options());
    float* op = out.data_ptr<float>();
    auto* one = &attend_one;
#if LORASCOPE_X86
    if (cpu_features().avx2) one = &attend_one_avx2;
#endif
    parallel_for(0, B * kv_heads, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> scores(static_cast<size_t>(G * (L + 2)));
        // [B, 1, H, D]: (b, key/value head hk) writes query heads hk * G ... hk * G + G - 1, rows i * G ...
        for (int64_t i = begin; i < end; ++i) {
            if (i + 1 < end) prefetch_first_keys(o, i + 1, keys_to_read((i + 1) / kv_heads));
            one(o, i, keys_to_read(i / kv_heads), scores.data(), op + i * G * D);
        }
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
    TORCH_CHECK(pool_keys.dim() == 4 && pool_keys.size(1) > 0 && H % pool_keys.size(1) == 0 && pool_keys.size(2) == block &&
                    pool_keys.size(3) == D &&
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
    o.group = H / pool_keys.size(1);
    o.scale = static_cast<float>(score_scale);
    o.table = table.data();
    o.width = width;
    o.block = block;
    return run(o, q, bias, B, &valid);
}

}  // namespace lorascope::ops
