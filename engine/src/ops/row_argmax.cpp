#include "ops/row_argmax.h"

#include <algorithm>
#include <cmath>

#include "ops/cpu_isa.h"
#include "ops/thread_pool.h"

#if LORASCOPE_X86
#include <immintrin.h>
#endif

namespace lorascope::ops {

namespace {

// The first NaN's index, or -1.
int64_t first_nan(const float* x, int64_t n) {
    for (int64_t k = 0; k < n; ++k)
        if (std::isnan(x[k])) return k;
    return -1;
}

// The first maximal index, or the first NaN's. The first loop's compare is false for NaN (and
// branch-free OR-ing of x != x notes one), so a row without NaN is one pass.
int64_t argmax_row(const float* x, int64_t n) {
    float best = x[0];
    int64_t at = 0;
    bool nan = x[0] != x[0];
    for (int64_t k = 1; k < n; ++k) {
        const float v = x[k];
        nan |= v != v;
        if (v > best) {
            best = v;
            at = k;
        }
    }
    return nan ? first_nan(x, n) : at;
}

#if LORASCOPE_X86
// The same index eight lanes at a time: each lane keeps its first maximum (a strict compare, false
// for NaN), then the largest value's smallest lane index wins, which is the row's first maximal
// index. The scalar loop's branch on every value ran at ~0.5 G values/s (W1's greedy argmax over
// [32, 32128] scores was 2.2% of an int8 run held to AVX2, `perf record` on the Xeon).
__attribute__((target("avx2"))) int64_t argmax_row_avx2(const float* x, int64_t n) {
    if (n < 16 || n >= (int64_t{1} << 31)) return argmax_row(x, n);
    __m256 best = _mm256_loadu_ps(x);
    __m256i at = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 nan = _mm256_cmp_ps(best, best, _CMP_UNORD_Q);
    __m256i index = at;
    const __m256i eight = _mm256_set1_epi32(8);
    int64_t k = 8;
    for (; k + 8 <= n; k += 8) {
        const __m256 v = _mm256_loadu_ps(x + k);
        index = _mm256_add_epi32(index, eight);
        const __m256 greater = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        best = _mm256_blendv_ps(best, v, greater);
        at = _mm256_blendv_epi8(at, index, _mm256_castps_si256(greater));
    }
    alignas(32) float values[8];
    alignas(32) int32_t indices[8];
    _mm256_store_ps(values, best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(indices), at);
    bool any_nan = _mm256_movemask_ps(nan) != 0;
    float top = values[0];
    int64_t top_at = indices[0];
    for (int lane = 1; lane < 8; ++lane)
        if (values[lane] > top || (values[lane] == top && indices[lane] < top_at)) {
            top = values[lane];
            top_at = indices[lane];
        }
    for (; k < n; ++k) {  // the tail's indices are past every lane's
        any_nan |= x[k] != x[k];
        if (x[k] > top) {
            top = x[k];
            top_at = k;
        }
    }
    return any_nan ? first_nan(x, n) : top_at;
}
#endif

}  // namespace

void argmax_rows(const float* x, int64_t rows, int64_t cols, int64_t ld, int64_t* out) {
    auto* row = &argmax_row;
#if LORASCOPE_X86
    if (cpu_features().avx2) row = &argmax_row_avx2;
#endif
    // A chunk of at least ~32k values: a parallel region costs a few microseconds.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(cols, 1));
    parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = row(x + i * ld, cols);
    });
}

}  // namespace lorascope::ops
