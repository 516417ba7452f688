// Element-wise kernels around the CPU's int8 and bfloat16 matrix products (ops/cpu_matmul.h):
// dynamic per-row quantization of activations, the int32 -> float32 epilogue, float32 -> bfloat16.
//
// Each has AVX-512 and AVX2 paths (chosen at run time from the instruction sets in effect,
// ops/cpu_isa.h) and a portable one that gives the same values: all round half to even, and all
// compute the epilogue with the same fused multiply-adds. Why hand-written: at 32 rows the int8 product of a t5-small layer takes
// 9 us (oneDNN brgemm, VNNI); the same epilogue as four ATen element-wise ops took longer than the
// product itself, and oneDNN 2.6 falls back to a reference kernel (5,000x slower, measured) when
// per-row scales are given to it as a post-op.
#pragma once

#include <cstdint>

namespace lorascope::ops {

// Asymmetric per-row quantization of activations to unsigned bytes (the u8 operand VNNI
// multiplies): mins[i] = min_k x[i,k], scale[i] = (max - min) / 255 (1 for a constant row) and
// out[i,k] = round((x[i,k] - min) / scale) in [0, 255]. Asymmetric because activations are often
// one-sided (ReLU outputs, T5's feed-forward "wo" input): symmetric int8 spends half its codes on
// values that never occur there. On the demo pack's T5 the symmetric form lost 2 of 50 held-out
// answers (0.98 -> 0.94) that float32 got right. x rows are `ldx` floats apart, out rows `ldo`
// bytes (0: cols).
void quantize_rows_u8(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint8_t* out, float* scales,
                      float* mins, int64_t ldo = 0);

// Symmetric per-row int8 quantization of weights (one scale per output channel), int8 in
// [-max, max]: scale = max_k |x[i,k]| / max (1 for an all-zero row). max: 127, or 63 for the panel
// layout of plain AVX2 (ops/panel_gemm.h, Layout::int8_max).
void quantize_rows_s8(const float* x, int64_t rows, int64_t cols, int64_t ldx, int8_t* out, float* scales,
                      int max = 127);

// The product of those two, back in float32: with q_x = (x - min) / s_x and q_w = w / s_w,
// x . w = s_x s_w (q_x . q_w) + min s_w sum(q_w). So
// y[i,j] = float(acc[i,j]) * (row_scale[i] * col_scale[j]) + (row_min[i] * col_offset[j] + bias[j]),
// with col_offset[j] = col_scale[j] * sum_k q_w[j,k] and bias optional (null).
// acc and y may be the same buffer (int32 and float32 have the same size).
void dequantize_s32(const int32_t* acc, int64_t rows, int64_t cols, const float* row_scale, const float* row_min,
                    const float* col_scale, const float* col_offset, const float* bias, float* y);

// Round-to-nearest-even float32 -> bfloat16 (stored as uint16_t); x rows are `ldx` floats apart.
void to_bf16_rows(const float* x, int64_t rows, int64_t cols, int64_t ldx, uint16_t* out);

}  // namespace lorascope::ops
