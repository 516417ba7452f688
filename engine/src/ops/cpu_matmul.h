// y = x W^T (+ b) on the CPU with the weight packed once, at load, in oneDNN's preferred layout,
// in float32, bfloat16 or int8.
//
// Why packed: oneDNN's sgemm (ops/cpu_gemm.h) re-packs W on every call. On this machine kind
// (AMD EPYC, AVX-512, 2 threads) a t5-small decode product at 32 rows, [32, 512] x [512, 2048],
// took 485 us through sgemm and 141 us through a matmul primitive over the pre-packed weight;
// the int8 product (u8 x s8 -> s32, VNNI brgemm) took 34 us and bfloat16 70 us (/tmp microbench,
// oneDNN 2.6.3; docs/benchmarks.md has the model-level figures).
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

enum class MatmulKind { Float32, Bfloat16, Int8 };
const char* matmul_kind_name(MatmulKind kind);  // "float32", "bfloat16", "int8"

// True when this build can pack weights for `kind` on this CPU; otherwise `why` says what is missing
// (oneDNN not built in, no AVX-512 BF16, no VNNI) in words a user can act on.
bool cpu_matmul_available(MatmulKind kind, std::string* why = nullptr);

class CpuMatmul {
public:
    // Told after each block of weight rows [begin, end) has been read, so that the caller can hand a
    // memory-mapped source's pages back while the rest is packed (peak memory: the packed copy
    // plus one block, not a second full-size weight).
    using RowsRead = std::function<void(int64_t begin, int64_t end)>;

    // weight [N, K] float32, bias [N] or undefined. The weight is read once, a block of rows at a
    // time; the packed copy (and, for int8, its scales) is all this object keeps.
    CpuMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind, const RowsRead& rows_read = {});
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

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lorascope::ops
