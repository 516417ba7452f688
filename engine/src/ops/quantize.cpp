#include "ops/quantize.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define LORASCOPE_X86 1
#else
#define LORASCOPE_X86 0
#endif

namespace lorascope::ops {

namespace {

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
    at::parallel_for(0, rows, grain, body);
}

// Splits a long single row into column ranges instead (the LM head's epilogue for one row).
template <typename F>
void for_cols(int64_t cols, const F& body) {
    if (cols < 4 * kParallelElements) {
        body(0, cols);
        return;
    }
    at::parallel_for(0, cols, kParallelElements, body);
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

// q = clamp(round((x - offset) * inv), lo, hi) + shift, stored as bytes.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void quantize_row_avx512(const float* x, int64_t n, float offset,
                                                                             float inv, int lo, int hi, int shift,
                                                                             uint8_t* out) {
    const __m512 vinv = _mm512_set1_ps(inv), voff = _mm512_set1_ps(offset);
    const __m512i vlo = _mm512_set1_epi32(lo), vhi = _mm512_set1_epi32(hi), vshift = _mm512_set1_epi32(shift);
    int64_t k = 0;
    for (; k < n; k += 16) {
        const int64_t left = n - k;
        const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
        const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + k), voff);
        __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(v, vinv));  // half to even
        q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, vlo), vhi), vshift);
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
#endif

// Per-row quantization to bytes. Symmetric (mins == nullptr): scale = absmax / 127, values in
// [-127, 127] plus `shift`. Asymmetric: scale = (max - min) / 255, values (x - min) / scale in
// [0, 255], and mins[i] = min.
void quantize_rows(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* out, float* scales,
                   float* mins, int shift) {
    const bool vec = cpu_has_avx512();
    const bool asym = mins != nullptr;
    const int lo = asym ? 0 : -127, hi = asym ? 255 : 127;
    for_rows(rows, cols, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float* row = x + i * ldx;
            uint8_t* q = out + i * cols;
            float offset = 0.0f, range = 0.0f;
            if (asym) {
                float mn = 0.0f, mx = 0.0f;
#if LORASCOPE_X86
                if (vec) row_minmax_avx512(row, cols, &mn, &mx);
                else row_minmax_scalar(row, cols, &mn, &mx);
#else
                row_minmax_scalar(row, cols, &mn, &mx);
#endif
                offset = mn;
                range = mx - mn;
                mins[i] = mn;
            } else {
#if LORASCOPE_X86
                range = vec ? row_absmax_avx512(row, cols) : row_absmax_scalar(row, cols);
#else
                range = row_absmax_scalar(row, cols);
#endif
            }
            const float steps = static_cast<float>(hi);
            scales[i] = range > 0.0f ? range / steps : 1.0f;
            const float inv = range > 0.0f ? steps / range : 0.0f;
#if LORASCOPE_X86
            if (vec) {
                quantize_row_avx512(row, cols, offset, inv, lo, hi, shift, q);
                continue;
            }
#endif
            for (int64_t k = 0; k < cols; ++k)
                q[k] = static_cast<uint8_t>(std::clamp(round_even((row[k] - offset) * inv), lo, hi) + shift);
        }
    });
}

}  // namespace

bool cpu_has_avx512() {
#if LORASCOPE_X86
    static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    return yes;
#else
    return false;
#endif
}

bool cpu_has_int8_dot() {
#if LORASCOPE_X86
    static const bool yes = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
    return yes;
#else
    return false;
#endif
}

bool cpu_has_bf16_dot() {
#if LORASCOPE_X86
    static const bool yes = __builtin_cpu_supports("avx512bf16");
    return yes;
#else
    return false;
#endif
}

void quantize_rows_u8(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* out, float* scales,
                      float* mins) {
    quantize_rows(x, rows, cols, ldx, out, scales, mins, 0);
}

void quantize_rows_s8(const float* x, int64_t rows, int64_t cols, int64_t ldx, int8_t* out, float* scales) {
    // Two's complement: the low byte of a value in [-127, 127] is its int8 form.
    quantize_rows(x, rows, cols, ldx, reinterpret_cast<uint8_t*>(out), scales, nullptr, 0);
}

void dequantize_s32(const int32_t* acc, int64_t rows, int64_t cols, const float* row_scale, const float* row_min,
                    const float* col_scale, const float* col_offset, const float* bias, float* y) {
    const bool vec = cpu_has_avx512();
    auto row = [&](int64_t i, int64_t j0, int64_t j1) {
        const int32_t* a = acc + i * cols;
        float* out = y + i * cols;
#if LORASCOPE_X86
        if (vec) {
            dequantize_row_avx512(a + j0, j1 - j0, row_scale[i], row_min[i], col_scale + j0, col_offset + j0,
                                  bias ? bias + j0 : nullptr, out + j0);
            return;
        }
#endif
        for (int64_t j = j0; j < j1; ++j) {
            const float off = std::fma(row_min[i], col_offset[j], bias ? bias[j] : 0.0f);
            out[j] = std::fma(static_cast<float>(a[j]), row_scale[i] * col_scale[j], off);
        }
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
    const bool vec = cpu_has_avx512() && cpu_has_bf16_dot();
    for_rows(rows, cols, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
#if LORASCOPE_X86
            if (vec) {
                bf16_row_avx512(x + i * ldx, cols, out + i * cols);
                continue;
            }
#endif
            for (int64_t k = 0; k < cols; ++k) out[i * cols + k] = bf16_round(x[i * ldx + k]);
        }
    });
}

}  // namespace lorascope::ops
