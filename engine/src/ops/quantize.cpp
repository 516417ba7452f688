#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cpu_isa.h"
#include "ops/thread_pool.h"

#if LORASCOPE_X86
#include <immintrin.h>
#endif

namespace lorascope::ops {

namespace {

// The vector paths, chosen from the instruction sets in effect (ops/cpu_isa.h).
enum class Path { Scalar, Avx2, Avx512 };
Path path() {
    const CpuFeatures& f = cpu_features();
    return f.avx512 ? Path::Avx512 : f.avx2 ? Path::Avx2 : Path::Scalar;
}

// Work below this many elements runs on the calling thread: a parallel region costs ~5 us here,
// more than a decode step's 32 x 512 quantization.
constexpr int64_t kParallelElements = 1 << 16;

template <typename F>
void for_rows(int64_t rows, int64_t cols, const F& body) {
    if (rows * cols < kParallelElements || rows < 2) {
        body(0, rows);
        return;
    }
    const int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(cols, 1));
    parallel_for(0, rows, grain, body);
}

// Splits a long single row into column ranges instead (the LM head's epilogue for one row).
template <typename F>
void for_cols(int64_t cols, const F& body) {
    if (cols < 4 * kParallelElements) {
        body(0, cols);
        return;
    }
    parallel_for(0, cols, kParallelElements, body);
}

float row_absmax_scalar(const float* x, int64_t n) {
    float m = 0.0f;
    for (int64_t k = 0; k < n; ++k) m = std::max(m, std::fabs(x[k]));
    return m;
}

void row_minmax_scalar(const float* x, int64_t n, float* lo, float* hi) {
    float a = n ? x[0] : 0.0f, b = a;
    for (int64_t k = 1; k < n; ++k) {
        a = std::min(a, x[k]);
        b = std::max(b, x[k]);
    }
    *lo = a;
    *hi = b;
}

inline int32_t round_even(float v) { return static_cast<int32_t>(std::nearbyint(v)); }

void dequantize_row_scalar(const int32_t* acc, int64_t n, float row_scale, float row_min, const float* col_scale,
                           const float* col_offset, const float* bias, float* y) {
    for (int64_t j = 0; j < n; ++j) {
        const float off = std::fma(row_min, col_offset[j], bias ? bias[j] : 0.0f);
        y[j] = std::fma(static_cast<float>(acc[j]), row_scale * col_scale[j], off);
    }
}

void quantize_row_scalar(const float* x, int64_t n, float offset, float inv, int lo, int hi, uint8_t* out) {
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<uint8_t>(std::clamp(round_even((x[k] - offset) * inv), lo, hi));
}

uint16_t bf16_round(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

#if LORASCOPE_X86
// GCC 12's AVX-512 intrinsics pass deliberately undefined vectors (_mm512_undefined_*) as their
// unused merge operands, which -Wall reports as uninitialized once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512bw,avx512vl"))) float row_absmax_avx512(const float* x, int64_t n) {
    __m512 m = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(x + k)));
    if (k < n) {
        const __mmask16 tail = static_cast<__mmask16>((1u << (n - k)) - 1u);
        m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + k)));
    }
    return _mm512_reduce_max_ps(m);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void row_minmax_avx512(const float* x, int64_t n, float* lo,
                                                                           float* hi) {
    if (n == 0) {
        *lo = *hi = 0.0f;
        return;
    }
    __m512 a = _mm512_set1_ps(x[0]), b = a;
    for (int64_t k = 0; k < n; k += 16) {
        const int64_t left = n - k;
        const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
        const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(x[0]), m, x + k);  // masked lanes repeat x[0]
        a = _mm512_min_ps(a, v);
        b = _mm512_max_ps(b, v);
    }
    *lo = _mm512_reduce_min_ps(a);
    *hi = _mm512_reduce_max_ps(b);
}

// q = clamp(round((x - offset) * inv), lo, hi), stored as bytes.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void quantize_row_avx512(const float* x, int64_t n, float offset,
                                                                             float inv, int lo, int hi,
                                                                             uint8_t* out) {
    const __m512 vinv = _mm512_set1_ps(inv), voff = _mm512_set1_ps(offset);
    const __m512i vlo = _mm512_set1_epi32(lo), vhi = _mm512_set1_epi32(hi);
    int64_t k = 0;
    for (; k < n; k += 16) {
        const int64_t left = n - k;
        const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
        const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + k), voff);
        __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(v, vinv));  // half to even
        q = _mm512_min_epi32(_mm512_max_epi32(q, vlo), vhi);
        _mm_mask_storeu_epi8(out + k, mask, _mm512_cvtepi32_epi8(q));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void dequantize_row_avx512(const int32_t* acc, int64_t n,
                                                                               float row_scale, float row_min,
                                                                               const float* col_scale,
                                                                               const float* col_offset,
                                                                               const float* bias, float* y) {
    const __m512 rs = _mm512_set1_ps(row_scale), rm = _mm512_set1_ps(row_min);
    for (int64_t j = 0; j < n; j += 16) {
        const int64_t left = n - j;
        const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
        const __m512 a = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, acc + j));
        const __m512 s = _mm512_mul_ps(rs, _mm512_maskz_loadu_ps(m, col_scale + j));
        const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + j) : _mm512_setzero_ps();
        const __m512 off = _mm512_fmadd_ps(rm, _mm512_maskz_loadu_ps(m, col_offset + j), b);
        _mm512_mask_storeu_ps(y + j, m, _mm512_fmadd_ps(a, s, off));
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void bf16_row_avx512(const float* x, int64_t n,
                                                                            uint16_t* out) {
    for (int64_t k = 0; k < n; k += 16) {
        const int64_t left = n - k;
        const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
        const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + k));
        __m256i bits;
        std::memcpy(&bits, &h, sizeof bits);
        _mm256_mask_storeu_epi16(out + k, m, bits);
    }
}
#pragma GCC diagnostic pop

// AVX2 (CPUs without AVX-512, or LORASCOPE_CPU_ISA=avx2): whole vectors of 8, the tail through the
// scalar code, the same operations in the same order.
#define LS_AVX2 __attribute__((target("avx2,fma,f16c")))

LS_AVX2 float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

LS_AVX2 float hmin8(__m256 v) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps(m, m, 1)));
}

LS_AVX2 float row_absmax_avx2(const float* x, int64_t n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
    return std::max(hmax8(m), row_absmax_scalar(x + k, n - k));
}

LS_AVX2 void row_minmax_avx2(const float* x, int64_t n, float* lo, float* hi) {
    if (n < 8) return row_minmax_scalar(x, n, lo, hi);
    __m256 a = _mm256_loadu_ps(x), b = a;
    int64_t k = 8;
    for (; k + 8 <= n; k += 8) {
        const __m256 v = _mm256_loadu_ps(x + k);
        a = _mm256_min_ps(a, v);
        b = _mm256_max_ps(b, v);
    }
    *lo = hmin8(a);
    *hi = hmax8(b);
    for (; k < n; ++k) {
        *lo = std::min(*lo, x[k]);
        *hi = std::max(*hi, x[k]);
    }
}

LS_AVX2 void quantize_row_avx2(const float* x, int64_t n, float offset, float inv, int lo, int hi, uint8_t* out) {
    const __m256 vinv = _mm256_set1_ps(inv), voff = _mm256_set1_ps(offset);
    const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + k), voff), vinv));
        q = _mm256_min_epi32(_mm256_max_epi32(q, vlo), vhi);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        // [0, 255] saturates unsigned, [-127, 127] signed: either way each value's own low byte.
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + k), lo < 0 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
    }
    quantize_row_scalar(x + k, n - k, offset, inv, lo, hi, out + k);
}

LS_AVX2 void dequantize_row_avx2(const int32_t* acc, int64_t n, float row_scale, float row_min, const float* col_scale,
                                 const float* col_offset, const float* bias, float* y) {
    const __m256 rs = _mm256_set1_ps(row_scale), rm = _mm256_set1_ps(row_min);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 a = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j)));
        const __m256 s = _mm256_mul_ps(rs, _mm256_loadu_ps(col_scale + j));
        const __m256 b = bias ? _mm256_loadu_ps(bias + j) : _mm256_setzero_ps();
        _mm256_storeu_ps(y + j, _mm256_fmadd_ps(a, s, _mm256_fmadd_ps(rm, _mm256_loadu_ps(col_offset + j), b)));
    }
    dequantize_row_scalar(acc + j, n - j, row_scale, row_min, col_scale + j, col_offset + j, bias ? bias + j : nullptr,
                          y + j);
}

LS_AVX2 void bf16_row_avx2(const float* x, int64_t n, uint16_t* out) {
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff), quiet = _mm256_set1_epi32(0x40);
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m256 v = _mm256_loadu_ps(x + k);
        const __m256i bits = _mm256_castps_si256(v);
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(half, odd)), 16);
        const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), quiet);
        r = _mm256_blendv_epi8(r, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k),
                         _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
    }
    for (; k < n; ++k) out[k] = bf16_round(x[k]);
}
#undef LS_AVX2
#endif

void row_minmax(Path p, const float* x, int64_t n, float* lo, float* hi) {
#if LORASCOPE_X86
    if (p == Path::Avx512) return row_minmax_avx512(x, n, lo, hi);
    if (p == Path::Avx2) return row_minmax_avx2(x, n, lo, hi);
#endif
    (void)p;
    row_minmax_scalar(x, n, lo, hi);
}

float row_absmax(Path p, const float* x, int64_t n) {
#if LORASCOPE_X86
    if (p == Path::Avx512) return row_absmax_avx512(x, n);
    if (p == Path::Avx2) return row_absmax_avx2(x, n);
#endif
    (void)p;
    return row_absmax_scalar(x, n);
}

void quantize_row(Path p, const float* x, int64_t n, float offset, float inv, int lo, int hi, uint8_t* q) {
#if LORASCOPE_X86
    if (p == Path::Avx512) return quantize_row_avx512(x, n, offset, inv, lo, hi, q);
    if (p == Path::Avx2) return quantize_row_avx2(x, n, offset, inv, lo, hi, q);
#endif
    (void)p;
    quantize_row_scalar(x, n, offset, inv, lo, hi, q);
}

// Per-row quantization to bytes, rows of `out` ldo bytes apart. Symmetric (mins == nullptr):
// scale = absmax / smax, values in [-smax, smax]. Asymmetric: scale = (max - min) / 255, values
// (x - min) / scale in [0, 255], and mins[i] = min.
void quantize_rows(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* out, int64_t ldo, float* scales,
                   float* mins, int smax = 127) {
    const Path p = path();
    const bool asym = mins != nullptr;
    const int lo = asym ? 0 : -smax, hi = asym ? 255 : smax;
    for_rows(rows, cols, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float* row = x + i * ldx;
            float offset = 0.0f, range = 0.0f;
            if (asym) {
                float mn = 0.0f, mx = 0.0f;
                row_minmax(p, row, cols, &mn, &mx);
                offset = mn;
                range = mx - mn;
                mins[i] = mn;
            } else {
                range = row_absmax(p, row, cols);
            }
            const float steps = static_cast<float>(hi);
            scales[i] = range > 0.0f ? range / steps : 1.0f;
            quantize_row(p, row, cols, offset, range > 0.0f ? steps / range : 0.0f, lo, hi, out + i * ldo);
        }
    });
}

}  // namespace

void quantize_rows_u8(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* out, float* scales,
                      float* mins, int64_t ldo) {
    quantize_rows(x, rows, cols, ldx, out, ldo ? ldo : cols, scales, mins);
}

void quantize_rows_s8(const float* x, int64_t rows, int64_t cols, int64_t ldx, int8_t* out, float* scales, int max) {
    // Two's complement: the low byte of a value in [-127, 127] is its int8 form.
    quantize_rows(x, rows, cols, ldx, reinterpret_cast<uint8_t*>(out), cols, scales, nullptr, std::clamp(max, 1, 127));
}

void dequantize_s32(const int32_t* acc, int64_t rows, int64_t cols, const float* row_scale, const float* row_min,
                    const float* col_scale, const float* col_offset, const float* bias, float* y) {
    const Path p = path();
    auto row = [&](int64_t i, int64_t j0, int64_t j1) {
        const int32_t* a = acc + i * cols + j0;
        float* out = y + i * cols + j0;
        const float* b = bias ? bias + j0 : nullptr;
#if LORASCOPE_X86
        if (p == Path::Avx512)
            return dequantize_row_avx512(a, j1 - j0, row_scale[i], row_min[i], col_scale + j0, col_offset + j0, b, out);
        if (p == Path::Avx2)
            return dequantize_row_avx2(a, j1 - j0, row_scale[i], row_min[i], col_scale + j0, col_offset + j0, b, out);
#endif
        (void)p;
        dequantize_row_scalar(a, j1 - j0, row_scale[i], row_min[i], col_scale + j0, col_offset + j0, b, out);
    };
    if (rows == 1) {
        for_cols(cols, [&](int64_t j0, int64_t j1) { row(0, j0, j1); });
        return;
    }
    for_rows(rows, cols, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) row(i, 0, cols);
    });
}

void to_bf16_rows(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint16_t* out) {
    const Path p = path();
    const bool native = p == Path::Avx512 && cpu_features().avx512_bf16;
    for_rows(rows, cols, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float* row = x + i * ldx;
            uint16_t* o = out + i * cols;
#if LORASCOPE_X86
            if (native) {
                bf16_row_avx512(row, cols, o);
                continue;
            }
            if (p != Path::Scalar) {
                bf16_row_avx2(row, cols, o);
                continue;
            }
#endif
            (void)native;
            for (int64_t k = 0; k < cols; ++k) o[k] = bf16_round(row[k]);
        }
    });
}

}  // namespace lorascope::ops
