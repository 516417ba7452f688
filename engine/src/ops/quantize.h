// Element-wise kernels around the CPU's int8 and bfloat16 matrix products (ops/cpu_matmul.h):
// dynamic per-row quantization of activations, the int32 -> float32 epilogue, float32 -> bfloat16.
//
// Each has an AVX-512 path (chosen at run time from the CPU's flags) and a portable one that gives
// the same values: both round half to even, and both compute the epilogue with one fused
// multiply-add per element. Why hand-written: at 32 rows the int8 product of a t5-small layer takes
// 9 us (oneDNN brgemm, VNNI); the same epilogue as four ATen element-wise ops took longer than the
// product itself, and oneDNN 2.6 falls back to a reference kernel (5,000x slower, measured) when
// per-row scales are given to it as a post-op.
#pragma once

#include <cstdint>

namespace lorascope::ops {

// Symmetric per-row int8 quantization, stored shifted by +128 as unsigned bytes (the u8 x s8 form
// that VNNI multiplies): scale[i] = max_k |x[i,k]| / 127 (1 for an all-zero row) and
// out[i,k] = round(x[i,k] / scale[i]) + 128, in [1, 255]. x rows are `ldx` floats apart.
void quantize_rows_u8(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* out, float* scales);

// Symmetric per-row int8 quantization of weights (one scale per output channel), int8 in [-127, 127].
void quantize_rows_s8(const float* x, int64_t rows, int64_t cols, int64_t ldx, int8_t* out, float* scales);

// y[i,j] = float(acc[i,j] - comp[j]) * (row_scale[i] * col_scale[j]) + bias[j] (bias may be null).
// acc and y may be the same buffer (int32 and float32 have the same size).
void dequantize_s32(const int32_t* acc, int64_t rows, int64_t cols, const int32_t* comp, const float* row_scale,
                    const float* col_scale, const float* bias, float* y);

// Round-to-nearest-even float32 -> bfloat16 (stored as uint16_t); x rows are `ldx` floats apart.
void to_bf16_rows(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint16_t* out);

// What the running CPU offers for these kernels and for oneDNN's int8 / bfloat16 products.
bool cpu_has_avx512();       // AVX-512 F + BW + VL (the vector paths above)
bool cpu_has_int8_dot();     // AVX-512 VNNI or AVX-VNNI: u8 x s8 products summed in int32 without saturation
bool cpu_has_bf16_dot();     // AVX-512 BF16: bfloat16 dot products accumulated in float32

}  // namespace lorascope::ops
