// Our own CPU products over weights packed in panels: float32, int8 (per output channel), bfloat16
// and 4-bit (groups of 32 inputs with a float16 scale), y = x W^T + b with float32 x and y, for CPUs
// where oneDNN has no fast kernel (no VNNI for int8, no AVX-512 BF16 for bfloat16; oneDNN has no
// 4-bit at all), for batch-1 decoding, where a product is one pass over the weights, and for
// products whose results must not depend on the thread count (float32: ops/cpu_matmul.h).
//
// Layout: output columns in panels of 16; within a panel the inputs in steps (int8: 4 inputs,
// bfloat16: 2, 4-bit: 4 inputs of a 32-input group, float32: 1), each step all 16 columns. A kernel loads a
// step's weights for 16 columns with one or two vector loads and multiplies them by one broadcast
// activation per row: no horizontal sums, the 16 outputs land in vector lanes, and a panel is one
// contiguous stream (what a batch-1 product is bound by). The layout is the same for every
// instruction set, so one packed weight serves every kernel below (the tests run each on it).
//
// Every kernel computes the same sums in the same order, so over one packed weight the results are
// bit-identical across instruction sets (int8 and 4-bit: exact int32 sums, the float epilogue in one
// fixed order; bfloat16 and float32: one chain of fused multiply-adds per output over the inputs in
// order). Which int8 packing a CPU makes differs: 7-bit weights without VNNI (Layout::int8_max).
//
// Torch-free and free of x86 intrinsics in this header: it compiles on arm64 (scalar kernels).
#pragma once

#include <cstdint>

namespace lorascope::ops::panel {

constexpr int64_t kCols = 16;   // output columns per panel
constexpr int64_t kGroup = 32;  // 4-bit: inputs per scale
constexpr int kNarrowInt8Max = 63;  // 7-bit int8 weights (Layout::int8_max)

enum class Format { Int8, Bf16, Int4, F32 };

// The kernels, by instruction set. Int8/Int4 without VNNI use the AVX2 kernel on AVX-512 CPUs too.
// Amx: int8 only (panel_gemm_amx.cpp), at any number of rows; a product of a few rows wastes most
// of a 16-row tile, so callers pick it by rows (amx_pays_off); 4-bit runs the AVX-512 VNNI kernel.
enum class Kernel { Scalar, Avx2, AvxVnni, Avx512, Avx512Vnni, Amx };
const char* kernel_name(Kernel kernel);
// The kernel used under the instruction sets in effect (ops/cpu_isa.h), and whether `kernel` may run.
Kernel best_kernel(Format format);
bool kernel_available(Format format, Kernel kernel);
// With `best_kernel` Amx: whether a product of M rows should run it rather than AVX-512 VNNI.
bool amx_pays_off(int64_t M);

struct Layout {
    Format format = Format::Int8;
    int64_t K = 0, N = 0;
    int64_t k_padded = 0;     // K rounded up to whole steps (int8: 4, bfloat16: 2, 4-bit: 32, float32: 1)
    int64_t panels = 0;       // ceil(N / 16)
    int64_t panel_bytes = 0;  // one panel, its per-column data included
    // int8: the weights' range, [-int8_max, int8_max]. 63 where the product runs the plain AVX2
    // kernel (int8_weight_max): q_x in [0, 255] times weights of 7 bits cannot saturate the int16
    // pairs of vpmaddubsw (2 x 255 x 63 = 32130), so it multiplies q_x directly, two port-0/1
    // operations per 32 products where the sign form that 127 needs takes three. Every kernel
    // computes the same exact sums over either range.
    int int8_max = 127;
    // int8 weights within the 7 bits the plain AVX2 kernel multiplies without the sign form.
    bool narrow_int8() const { return format == Format::Int8 && int8_max <= kNarrowInt8Max; }
    int64_t bytes() const { return panels * panel_bytes; }
};
Layout make_layout(Format format, int64_t K, int64_t N);
// The int8 weights' range a product on `kernel` packs: 63 when its int8 work runs the plain AVX2
// kernel (no VNNI), else 127.
int int8_weight_max(Kernel kernel);

// Float data per output column kept beside the panels (each [N], float32):
//   int8: scale (of the symmetric int8 row) and offset = scale * sum_k q[n, k]
//   4-bit: offset = sum over groups of scale_g * sum_{k in g} q[n, k]; scale unused
//   bfloat16, float32: neither
struct Columns {
    float* scale = nullptr;
    float* offset = nullptr;
};

// Packs rows [n0, n0 + count) of W [N, K] (float32, rows `ldw` apart), n0 a multiple of 16, into
// `packed` (layout.bytes(), zeroed by the caller: padding must stay zero). Blocks of rows may be
// packed in any order, each once.
void pack_rows(const Layout& layout, const float* w, int64_t ldw, int64_t n0, int64_t count, uint8_t* packed,
               Columns columns);

// Row n of W as float32, as the products see it (dequantized): an embedding tied to this matrix.
void unpack_row(const Layout& layout, const uint8_t* packed, const float* column_scale, int64_t n, float* out);

// Activations of the int8 and 4-bit products: rows quantized per row (quantize_rows_u8 in
// ops/quantize.h: q = (x - min) / scale in [0, 255]), each `ld` bytes apart and zero from K up to
// layout.k_padded. The AVX2 int8 kernel (no VNNI) over weights in [-127, 127] also wants q ^ 0x80
// and |q ^ 0x80| per element (prepare_int8_planes), with which vpmaddubsw cannot saturate: see
// panel_gemm_simd.inc. Over 7-bit weights it needs neither.
struct QuantizedRows {
    const uint8_t* q = nullptr;
    const uint8_t* centred = nullptr;  // q ^ 0x80 (as int8: q - 128)
    const uint8_t* magnitude = nullptr;  // |q - 128|
    int64_t ld = 0;
    const float* scale = nullptr;  // [M]
    const float* min = nullptr;    // [M]
    int64_t rows = 0;              // rows of q that may be read, zero past M (AMX reads blocks of 16)
};
bool kernel_wants_planes(const Layout& layout, Kernel kernel);
void prepare_int8_planes(const uint8_t* q, int64_t count, uint8_t* centred, uint8_t* magnitude);

// The product for the columns of panels [p0, p1) and all M rows: y[i, n] for n in those panels
// (below N), rows of y `ldy` floats apart. bfloat16 and float32 read x (rows `ldx` floats apart, K used);
// int8 and 4-bit read xq. bias: [N] or null. Panels are independent: callers split them over threads.
struct Product {
    const Layout* layout = nullptr;
    const uint8_t* packed = nullptr;
    const float* column_scale = nullptr;
    const float* column_offset = nullptr;
    const float* bias = nullptr;
    int64_t M = 0;
    const float* x = nullptr;
    int64_t ldx = 0;
    QuantizedRows xq;
    float* y = nullptr;
    int64_t ldy = 0;
};
void multiply(const Product& product, Kernel kernel, int64_t p0, int64_t p1);

// Round-to-nearest-even float32 -> float16 bits, and back (exact); portable.
uint16_t to_half(float f);
float from_half(uint16_t h);

}  // namespace lorascope::ops::panel
