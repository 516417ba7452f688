#include "ops/panel_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/cpu_isa.h"
#include "ops/quantize.h"
#include "ops/thread_pool.h"

namespace lorascope::ops::panel {

#if LORASCOPE_X86
// panel_gemm_x86.cpp: one entry per compiled instruction set, each for every format it has.
namespace avx2 {
void multiply(const Product& product, int64_t p0, int64_t p1);
}
namespace avx_vnni {
void multiply(const Product& product, int64_t p0, int64_t p1);
}
namespace avx512 {
void multiply(const Product& product, int64_t p0, int64_t p1);
}
namespace avx512_vnni {
void multiply(const Product& product, int64_t p0, int64_t p1);
}
namespace amx {  // panel_gemm_amx.cpp: int8 only
void multiply(const Product& product, int64_t p0, int64_t p1);
}
#endif

namespace {

// A 4-bit group block of a panel: 8 steps of 4 inputs x 16 columns as nibbles (32 bytes a step:
// columns 0-7 in the low nibbles, 8-15 in the high ones, each input as q + 8 in [0, 15]), then the
// 16 columns' scales as float16.
constexpr int64_t kInt4StepBytes = 32;
constexpr int64_t kInt4BlockBytes = (kGroup / 4) * kInt4StepBytes + kCols * 2;

constexpr int kScaleCandidates = 9;

// Rows from which the AMX int8 kernel beats AVX-512 VNNI: on the 2-core Sapphire Rapids Xeon
// (one thread, CPU time, best of 7, [M, 512 | 1024 | 2048] x [.., 2048 | 4096]) AMX ran at
// 0.5-0.97x VNNI's speed for 1-4 rows (a tile of 16 rows mostly padding), 1.2-1.4x for 8, 1.9-2x
// for 16 and 1.6-2.1x for 32-128.
constexpr int64_t kAmxMinRows = 8;  // 2 * 9 + 1 scales tried per 4-bit group

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int32_t round_even(float v) { return static_cast<int32_t>(std::nearbyint(v)); }

// Byte of column c, input k within a 4-input step, in a 64-byte int8 step block.
inline int64_t step_byte(int64_t c, int64_t k) { return c * 4 + (k & 3); }

void pack_int8(const Layout& l, const float* w, int64_t ldw, int64_t n0, int64_t count, uint8_t* packed,
               Columns columns) {
    std::vector<int8_t> q(static_cast<size_t>(count * l.K));
    quantize_rows_s8(w, count, l.K, ldw, q.data(), columns.scale + n0, l.int8_max);
    const int64_t steps = l.k_padded / 4;
    for (int64_t j = 0; j < count; ++j) {
        const int64_t n = n0 + j, c = n % kCols;
        uint8_t* panel = packed + n / kCols * l.panel_bytes;
        int32_t sum = 0;
        for (int64_t k = 0; k < l.K; ++k) {
            const int8_t v = q[static_cast<size_t>(j * l.K + k)];
            panel[k / 4 * 64 + step_byte(c, k)] = static_cast<uint8_t>(v);
            sum += v;
        }
        std::memcpy(panel + steps * 64 + c * 4, &sum, sizeof sum);  // what the AVX2 kernel adds back
        columns.offset[n] = static_cast<float>(sum) * columns.scale[n];
    }
}

void pack_bf16(const Layout& l, const float* w, int64_t ldw, int64_t n0, int64_t count, uint8_t* packed) {
    std::vector<uint16_t> h(static_cast<size_t>(count * l.K));
    to_bf16_rows(w, count, l.K, ldw, h.data());
    for (int64_t j = 0; j < count; ++j) {
        const int64_t n = n0 + j, c = n % kCols;
        uint8_t* panel = packed + n / kCols * l.panel_bytes;
        for (int64_t k = 0; k < l.K; ++k)  // dword of column c: input 2s in its low half, 2s + 1 in its high half
            std::memcpy(panel + k / 2 * 64 + c * 4 + (k & 1) * 2, &h[static_cast<size_t>(j * l.K + k)], 2);
    }
}

void pack_f32(const Layout& l, const float* w, int64_t ldw, int64_t n0, int64_t count, uint8_t* packed) {
    for (int64_t j = 0; j < count; ++j) {
        const int64_t n = n0 + j, c = n % kCols;
        uint8_t* panel = packed + n / kCols * l.panel_bytes;
        for (int64_t k = 0; k < l.K; ++k) std::memcpy(panel + k * 64 + c * 4, w + j * ldw + k, 4);
    }
}

// One column's group, symmetric in [-8, 7] (GGUF's Q4_0 puts the value of largest magnitude at -8).
// The scale is searched, as llama.cpp's k-quants do: for each of a few candidates around Q4_0's,
// quantize, refit the scale by least squares, round it to float16, and keep the smallest squared
// error. (The demo pack's T5 lost 2 of 50 held-out answers with Q4_0's rule alone.)
float quantize_group(const float* w, int64_t n, int8_t* q) {
    float extreme = 0.0f;
    for (int64_t k = 0; k < n; ++k)
        if (std::fabs(w[k]) > std::fabs(extreme)) extreme = w[k];
    std::fill(q, q + kGroup, 0);
    if (extreme == 0.0f) return 0.0f;
    float best_error = INFINITY, best_d = 0.0f;
    int8_t trial[kGroup];
    for (int c = -kScaleCandidates; c <= kScaleCandidates; ++c) {
        const float inv = (-8.0f + 0.1f * c) / extreme;
        float wq = 0.0f, qq = 0.0f;
        for (int64_t k = 0; k < n; ++k) {
            trial[k] = static_cast<int8_t>(std::clamp(round_even(w[k] * inv), -8, 7));
            wq += w[k] * trial[k];
            qq += static_cast<float>(trial[k] * trial[k]);
        }
        const float d = qq > 0.0f ? from_half(to_half(wq / qq)) : 0.0f;
        float error = 0.0f;
        for (int64_t k = 0; k < n; ++k) error += (w[k] - d * trial[k]) * (w[k] - d * trial[k]);
        if (error < best_error) {
            best_error = error, best_d = d;
            std::copy(trial, trial + n, q);
        }
    }
    return best_d;
}

void pack_int4(const Layout& l, const float* w, int64_t ldw, int64_t n0, int64_t count, uint8_t* packed,
               Columns columns) {
    // The scale search is most of a 4-bit load: rows go to the pool's threads, 16 at a time (a
    // panel's rows share bytes, so a chunk is whole panels).
    parallel_for(0, (count + kCols - 1) / kCols, 1, [&](int64_t b, int64_t e) {
        int8_t q[kGroup];
        for (int64_t j = b * kCols; j < std::min(count, e * kCols); ++j) {
            const int64_t n = n0 + j, c = n % kCols;
            uint8_t* panel = packed + n / kCols * l.panel_bytes;
            double offset = 0.0;
            for (int64_t g = 0; g * kGroup < l.K; ++g) {
                const float d = quantize_group(w + j * ldw + g * kGroup, std::min(kGroup, l.K - g * kGroup), q);
                uint8_t* block = panel + g * kInt4BlockBytes;
                int32_t sum = 0;
                for (int64_t k = 0; k < kGroup; ++k) {
                    const int64_t b64 = step_byte(c, k);  // of the step's 64 int8 values
                    block[k / 4 * kInt4StepBytes + b64 % 32] |= static_cast<uint8_t>((q[k] + 8) << (b64 >= 32 ? 4 : 0));
                    sum += q[k];
                }
                const uint16_t h = to_half(d);
                std::memcpy(block + (kGroup / 4) * kInt4StepBytes + c * 2, &h, 2);
                offset += static_cast<double>(d) * sum;
            }
            columns.offset[n] = static_cast<float>(offset);
        }
    });
}

// ---- The portable kernels: the definition of every sum the vector kernels compute. ----

// The int8 and 4-bit epilogue's constant part: min * column offset + bias.
float offset_part(const Product& pr, int64_t i, int64_t n) {
    return std::fma(pr.xq.min[i], pr.column_offset[n], pr.bias ? pr.bias[n] : 0.0f);
}

// Output (i, n), column c of `panel`.
void int8_scalar(const Product& pr, const uint8_t* panel, int64_t c, int64_t i, int64_t n) {
    const uint8_t* x = pr.xq.q + i * pr.xq.ld;
    int32_t acc = 0;
    for (int64_t k = 0; k < pr.layout->k_padded; ++k)
        acc += static_cast<int32_t>(x[k]) * static_cast<int8_t>(panel[k / 4 * 64 + step_byte(c, k)]);
    pr.y[i * pr.ldy + n] = std::fma(static_cast<float>(acc), pr.xq.scale[i] * pr.column_scale[n], offset_part(pr, i, n));
}

void bf16_scalar(const Product& pr, const uint8_t* panel, int64_t c, int64_t i, int64_t n) {
    const int64_t K = pr.layout->K;
    const float* x = pr.x + i * pr.ldx;
    float acc = 0.0f;
    for (int64_t k = 0; k < pr.layout->k_padded; ++k) {
        uint16_t h;
        std::memcpy(&h, panel + k / 2 * 64 + c * 4 + (k & 1) * 2, 2);
        const uint32_t bits = static_cast<uint32_t>(h) << 16;
        float wk;
        std::memcpy(&wk, &bits, sizeof wk);
        acc = std::fma(k < K ? x[k] : 0.0f, wk, acc);  // the padding input is 0, as in the vector kernels
    }
    pr.y[i * pr.ldy + n] = pr.bias ? acc + pr.bias[n] : acc;
}

void f32_scalar(const Product& pr, const uint8_t* panel, int64_t c, int64_t i, int64_t n) {
    const float* x = pr.x + i * pr.ldx;
    float acc = 0.0f;
    for (int64_t k = 0; k < pr.layout->K; ++k) {
        float wk;
        std::memcpy(&wk, panel + k * 64 + c * 4, sizeof wk);
        acc = std::fma(x[k], wk, acc);
    }
    pr.y[i * pr.ldy + n] = pr.bias ? acc + pr.bias[n] : acc;
}

void int4_scalar(const Product& pr, const uint8_t* panel, int64_t c, int64_t i, int64_t n) {
    const uint8_t* x = pr.xq.q + i * pr.xq.ld;
    float f = 0.0f;
    for (int64_t g = 0; g * kGroup < pr.layout->k_padded; ++g) {
        const uint8_t* block = panel + g * kInt4BlockBytes;
        int32_t acc = 0;
        for (int64_t k = 0; k < kGroup; ++k) {
            const int64_t b = step_byte(c, k);
            const int nibble = (block[k / 4 * kInt4StepBytes + b % 32] >> (b >= 32 ? 4 : 0)) & 15;
            acc += static_cast<int32_t>(x[g * kGroup + k]) * (nibble - 8);
        }
        uint16_t h;
        std::memcpy(&h, block + (kGroup / 4) * kInt4StepBytes + c * 2, 2);
        f = std::fma(static_cast<float>(acc), from_half(h), f);
    }
    pr.y[i * pr.ldy + n] = std::fma(f, pr.xq.scale[i], offset_part(pr, i, n));
}

void multiply_scalar(const Product& pr, int64_t p0, int64_t p1) {
    const Layout& l = *pr.layout;
    auto* one = l.format == Format::Int8   ? int8_scalar
                : l.format == Format::Bf16 ? bf16_scalar
                : l.format == Format::F32  ? f32_scalar
                                           : int4_scalar;
    for (int64_t p = p0; p < p1; ++p)
        for (int64_t i = 0; i < pr.M; ++i)
            for (int64_t n = p * kCols; n < std::min(l.N, (p + 1) * kCols); ++n)
                one(pr, pr.packed + p * l.panel_bytes, n % kCols, i, n);
}

// The kernel that runs `kernel`'s work for `format` (int8 and 4-bit have no AVX-512 kernel without
// VNNI: the AVX2 one runs there; bfloat16 and float32 have no VNNI kernels).
Kernel implementation(Format format, Kernel kernel) {
    if (kernel == Kernel::Amx && format != Format::Int8) kernel = Kernel::Avx512Vnni;
    if (format == Format::Bf16 || format == Format::F32) {
        if (kernel == Kernel::AvxVnni) return Kernel::Avx2;
        if (kernel == Kernel::Avx512Vnni) return Kernel::Avx512;
    } else if (kernel == Kernel::Avx512) {
        return Kernel::Avx2;
    }
    return kernel;
}

}  // namespace

const char* kernel_name(Kernel kernel) {
    switch (kernel) {
        case Kernel::Scalar: return "scalar";
        case Kernel::Avx2: return "avx2";
        case Kernel::AvxVnni: return "avx_vnni";
        case Kernel::Avx512: return "avx512";
        case Kernel::Avx512Vnni: return "avx512_vnni";
        case Kernel::Amx: return "amx";
    }
    return "?";
}

bool kernel_available(Format, Kernel kernel) {
    const CpuFeatures& f = cpu_features();
    switch (kernel) {
        case Kernel::Scalar: return true;
        case Kernel::Avx2: return f.avx2;
        case Kernel::AvxVnni: return f.avx2 && f.avx_vnni;
        case Kernel::Avx512: return f.avx512;
        case Kernel::Avx512Vnni: return f.avx512 && f.avx512_vnni;
        case Kernel::Amx: return f.avx512 && f.avx512_vnni && f.amx_int8;
    }
    return false;
}

Kernel best_kernel(Format format) {
    for (Kernel k : {Kernel::Amx, Kernel::Avx512Vnni, Kernel::Avx512, Kernel::AvxVnni, Kernel::Avx2})
        if (kernel_available(format, k)) return implementation(format, k);
    return Kernel::Scalar;
}

bool amx_pays_off(int64_t M) { return M >= kAmxMinRows; }

bool kernel_wants_planes(const Layout& layout, Kernel kernel) {
    return layout.format == Format::Int8 && !layout.narrow_int8() && implementation(layout.format, kernel) == Kernel::Avx2;
}

int int8_weight_max(Kernel kernel) { return implementation(Format::Int8, kernel) == Kernel::Avx2 ? kNarrowInt8Max : 127; }

void prepare_int8_planes(const uint8_t* q, int64_t count, uint8_t* centred, uint8_t* magnitude) {
    for (int64_t k = 0; k < count; ++k) {
        const int v = static_cast<int>(q[k]) - 128;
        centred[k] = static_cast<uint8_t>(v);
        magnitude[k] = static_cast<uint8_t>(v < 0 ? -v : v);
    }
}

Layout make_layout(Format format, int64_t K, int64_t N) {
    Layout l;
    l.format = format;
    l.K = K;
    l.N = N;
    l.panels = (N + kCols - 1) / kCols;
    switch (format) {
        case Format::Int8:
            l.k_padded = round_up(K, 4);
            l.panel_bytes = l.k_padded / 4 * 64 + kCols * 4;  // steps, then the columns' int32 sums
            break;
        case Format::Bf16:
            l.k_padded = round_up(K, 2);
            l.panel_bytes = l.k_padded / 2 * 64;
            break;
        case Format::Int4:
            l.k_padded = round_up(K, kGroup);
            l.panel_bytes = l.k_padded / kGroup * kInt4BlockBytes;
            break;
        case Format::F32:
            l.k_padded = K;
            l.panel_bytes = K * 64;
            break;
    }
    return l;
}

void pack_rows(const Layout& layout, const float* w, int64_t ldw, int64_t n0, int64_t count, uint8_t* packed,
               Columns columns) {
    switch (layout.format) {
        case Format::Int8: return pack_int8(layout, w, ldw, n0, count, packed, columns);
        case Format::Bf16: return pack_bf16(layout, w, ldw, n0, count, packed);
        case Format::Int4: return pack_int4(layout, w, ldw, n0, count, packed, columns);
        case Format::F32: return pack_f32(layout, w, ldw, n0, count, packed);
    }
}

void unpack_row(const Layout& l, const uint8_t* packed, const float* column_scale, int64_t n, float* out) {
    const uint8_t* panel = packed + n / kCols * l.panel_bytes;
    const int64_t c = n % kCols;
    for (int64_t k = 0; k < l.K; ++k) {
        if (l.format == Format::Int8) {
            out[k] = static_cast<float>(static_cast<int8_t>(panel[k / 4 * 64 + step_byte(c, k)])) * column_scale[n];
        } else if (l.format == Format::F32) {
            std::memcpy(out + k, panel + k * 64 + c * 4, sizeof(float));
        } else if (l.format == Format::Bf16) {
            uint16_t h;
            std::memcpy(&h, panel + k / 2 * 64 + c * 4 + (k & 1) * 2, 2);
            const uint32_t bits = static_cast<uint32_t>(h) << 16;
            std::memcpy(out + k, &bits, sizeof(float));
        } else {
            const uint8_t* block = panel + k / kGroup * kInt4BlockBytes;
            const int64_t b = step_byte(c, k % kGroup);
            const int nibble = (block[(k % kGroup) / 4 * kInt4StepBytes + b % 32] >> (b >= 32 ? 4 : 0)) & 15;
            uint16_t h;
            std::memcpy(&h, block + (kGroup / 4) * kInt4StepBytes + c * 2, 2);
            out[k] = from_half(h) * static_cast<float>(nibble - 8);
        }
    }
}

void multiply(const Product& product, Kernel kernel, int64_t p0, int64_t p1) {
    if (p1 <= p0 || product.M == 0) return;
    switch (implementation(product.layout->format, kernel)) {
#if LORASCOPE_X86
        case Kernel::Avx2: return avx2::multiply(product, p0, p1);
        case Kernel::AvxVnni: return avx_vnni::multiply(product, p0, p1);
        case Kernel::Avx512: return avx512::multiply(product, p0, p1);
        case Kernel::Avx512Vnni: return avx512_vnni::multiply(product, p0, p1);
        case Kernel::Amx: return amx::multiply(product, p0, p1);
#endif
        default: return multiply_scalar(product, p0, p1);
    }
}

uint16_t to_half(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
    if (abs < 0x38800000u) {  // a float16 subnormal (or zero): round abs * 2^24 to an integer, half to even
        float scaled;
        const uint32_t a = abs;
        std::memcpy(&scaled, &a, sizeof scaled);
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled * 16777216.0f)));
    }
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // to nearest even at the 13th bit
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float from_half(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 31u, mantissa = h & 0x3ffu;
    float out;
    if (exponent == 0) {
        out = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -out : out;
    }
    const uint32_t bits = sign | (exponent == 31 ? 0x7f800000u | (mantissa << 13) : ((exponent + 112) << 23) | (mantissa << 13));
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

}  // namespace lorascope::ops::panel
