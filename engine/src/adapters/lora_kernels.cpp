#include "adapters/lora_kernels.h"

#include <algorithm>
#include <cmath>

#include "ops/cpu_isa.h"
#include "ops/dot.h"

#if LORASCOPE_X86
#include <immintrin.h>
#endif

namespace lorascope::adapters {

// The vector loops (lora_kernels_simd.inc) for AVX-512 and for AVX2; the wider one where the CPU
// has it. Measured on this project's AVX-512 EPYC (Zen 4), one thread, 272 positions of a
// 512-wide site (W4's prefill, the factors in cache): 64-80 GFLOP/s with AVX2's 16 registers and
// 4-position blocks, 105-139 with AVX-512's 32 and 8-position blocks (OpenBLAS, through ATen:
// 11-70 at that size). Decoding steps read the factors from memory at the same rate with either.
// The sums of a dot product run over 8 or 16 lanes, so results differ (by rounding) between the
// two instruction sets; on one CPU they never depend on the batch.

#if LORASCOPE_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace {
// The 8 lanes summed in a fixed order.
inline float reduce8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}
}  // namespace
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
namespace avx512 {
// The 16 lanes summed in a fixed order. (GCC 12's _mm512_reduce_add_ps and _mm512_castps512_ps256
// warn about an uninitialised variable of their own in -Wall builds; the zero-masked extracts do not.)
inline float reduce16(__m512 v) {
    return reduce8(_mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1)));
}
#define LK_V __m512
#define LK_W 16
#define LK_BLOCK 8
#define LK_ZERO() _mm512_setzero_ps()
#define LK_LOAD(p) _mm512_loadu_ps(p)
#define LK_STORE(p, v) _mm512_storeu_ps((p), (v))
#define LK_SET1(f) _mm512_set1_ps(f)
#define LK_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define LK_REDUCE(v) reduce16(v)
#include "adapters/lora_kernels_simd.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
#define LK_V __m256
#define LK_W 8
#define LK_BLOCK 4
#define LK_ZERO() _mm256_setzero_ps()
#define LK_LOAD(p) _mm256_loadu_ps(p)
#define LK_STORE(p, v) _mm256_storeu_ps((p), (v))
#define LK_SET1(f) _mm256_set1_ps(f)
#define LK_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define LK_REDUCE(v) reduce8(v)
#include "adapters/lora_kernels_simd.inc"
}  // namespace avx2
#pragma GCC pop_options
#endif

namespace {

// CPUs without AVX2 and FMA: one loop for any n, so invariant too.
void plain(const float* A, const float* BT, int64_t r, int64_t in, int64_t out, const float* const* xs,
           float* const* ys, int64_t n, float* h) {
    for (int64_t k = 0; k < r; ++k)
        for (int64_t i = 0; i < n; ++i) h[i * r + k] = ops::dot(A + k * in, xs[i], in);
    for (int64_t k = 0; k < r; ++k) {
        const float* b = BT + k * out;
        for (int64_t i = 0; i < n; ++i) {
            const float hv = h[i * r + k];
            float* y = ys[i];
            for (int64_t o = 0; o < out; ++o) y[o] += hv * b[o];
        }
    }
}

}  // namespace

LoraIsa lora_best_isa() {
    const ops::CpuFeatures& f = ops::cpu_features();  // under LORASCOPE_CPU_ISA
    return f.avx512 ? LoraIsa::Avx512 : f.avx2 ? LoraIsa::Avx2 : LoraIsa::Plain;
}

void lora_positions(LoraIsa isa, const float* A, const float* BT, int64_t r, int64_t in, int64_t out,
                    const float* const* xs, float* const* ys, int64_t n, float* h) {
    const bool few = n <= kLoraStreamingPositions;
    switch (std::min(isa, lora_best_isa())) {
#if LORASCOPE_X86
    case LoraIsa::Avx512:
        (few ? avx512::streaming : avx512::blocked)(A, BT, r, in, out, xs, ys, n, h);
        break;
    case LoraIsa::Avx2:
        (few ? avx2::streaming : avx2::blocked)(A, BT, r, in, out, xs, ys, n, h);
        break;
#endif
    default:
        (void)few;
        plain(A, BT, r, in, out, xs, ys, n, h);
        break;
    }
}

void lora_positions(const float* A, const float* BT, int64_t r, int64_t in, int64_t out, const float* const* xs,
                    float* const* ys, int64_t n, float* h) {
    lora_positions(lora_best_isa(), A, BT, r, in, out, xs, ys, n, h);
}

}  // namespace lorascope::adapters
