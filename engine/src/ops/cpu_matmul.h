// y = x W^T (+ b) on the CPU with the weight packed once, at load, in float32, bfloat16, int8 or
// 4-bit, through one of two backends (ops/matmul_backend.h), chosen per kind from the instruction
// sets in effect (ops/cpu_isa.h):
//   - oneDNN's matmul over its own packed layout: bfloat16 (weights and activations rounded to
//     bfloat16) where the CPU has AVX-512 BF16;
//   - our panel kernels (ops/panel_gemm.h) otherwise: float32 and int8 (as fast as oneDNN's, and
//     on our pool, whose results do not depend on the thread count and which keeps its speed
//     beside other programs), bfloat16 weights times float32 activations (summed in float32),
//     and 4-bit weights (oneDNN has none). Every kind runs on every CPU.
// LORASCOPE_CPU_MATMUL=onednn|panel overrides the choice where both can (A/B measurements).
//
// int8 follows CTranslate2's scheme: weights quantized symmetrically per output channel, the
// activations per row at every call, products summed in int32 and rescaled to float32. Unlike
// CTranslate2, the activations are quantized asymmetrically (min to max in 255 steps, the
// unsigned operand VNNI multiplies), which keeps twice the resolution for one-sided activations
// (ops/quantize.h has the measurement); the offset is taken back out with a per-column sum of the
// quantized weight computed once.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace lorascope::ops {

// Int4: groups of 32 inputs per output channel, symmetric, a float16 scale each (GGUF's Q4_0
// rounding: the value of largest magnitude maps to -8); activations as for int8.
enum class MatmulKind { Float32, Bfloat16, Int8, Int4 };
const char* matmul_kind_name(MatmulKind kind);  // "float32", "bfloat16", "int8", "int4"

// True when products of `kind` run on our panel kernels, on ops/thread_pool.h's threads; false
// when they run on oneDNN, in ATen's OpenMP team.
bool cpu_matmul_runs_on_pool(MatmulKind kind);

// What products of `kind` compute here, in words: which backend and kernel, and in which types.
std::string cpu_matmul_description(MatmulKind kind);

class MatmulBackend;

class CpuMatmul {
public:
    // Told after each block of weight rows [begin, end) has been read, so that the caller can hand a
    // memory-mapped source's pages back while the rest is packed (peak memory: the packed copy
    // plus one block, not a second full-size weight).
    using RowsRead = std::function<void(int64_t begin, int64_t end)>;

    // weight [N, K] float32, bias [N] or undefined. The weight is read once, a block of rows at a
    // time; the packed copy (and, for int8, its scales) is all this object keeps.
    // full_int8: int8 weights keep [-127, 127] on every kernel (a 4-bit model's embedding and head,
    // whose accuracy they carry), instead of the 7 bits the plain AVX2 kernel packs.
    CpuMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind, const RowsRead& rows_read = {},
              bool full_int8 = false);
    ~CpuMatmul();
    CpuMatmul(const CpuMatmul&) = delete;
    CpuMatmul& operator=(const CpuMatmul&) = delete;

    // x [..., K] float32 on the CPU -> new contiguous [..., N] float32.
    at::Tensor forward(const at::Tensor& x) const;

    // Rows of W (output channels) as float32, dequantized: [ids..., K]. For an embedding that shares
    // its matrix with this LM head, so that the table is held once.
    at::Tensor rows(const at::Tensor& ids) const;

    MatmulKind kind() const;
    int64_t in_features() const;
    int64_t out_features() const;
    int64_t bytes() const;  // packed weight, scales and column offsets
    std::string backend() const;  // "onednn", "panel avx2", ...
    // int8: the quantized weights' range, [-max, max] (63 on the plain AVX2 kernel, ops/panel_gemm.h).
    int int8_weight_max() const;

private:
    MatmulKind kind_;
    int64_t K_ = 0, N_ = 0;
    std::unique_ptr<const MatmulBackend> backend_;
    at::Tensor empty_bias_;  // K = 0: the output is the bias
};

}  // namespace lorascope::ops
