// The two ways a CpuMatmul (ops/cpu_matmul.h) multiplies: oneDNN's matmul primitives over oneDNN's
// packed layout (cpu_matmul_onednn.cpp), or our panel kernels (ops/panel_gemm.h,
// cpu_matmul_panel.cpp). Which one a weight gets is decided once, when it is packed.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ops/cpu_matmul.h"
#include "ops/panel_gemm.h"

namespace lorascope::ops {

class MatmulBackend {
public:
    virtual ~MatmulBackend() = default;
    // x: M rows of K floats, contiguous; y: M rows of N floats (written, bias included).
    virtual void forward(const float* x, int64_t M, float* y) const = 0;
    virtual void row(int64_t n, float* out) const = 0;  // row n of W as the products see it
    virtual int64_t bytes() const = 0;
    virtual std::string name() const = 0;  // "onednn", "panel avx2", ...
    virtual int int8_weight_max() const { return 127; }
};

// weight [N, K] float32 (read a block of rows at a time), bias [N] float32 or undefined.
std::unique_ptr<MatmulBackend> make_onednn_matmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind,
                                                  const CpuMatmul::RowsRead& rows_read);
std::unique_ptr<MatmulBackend> make_panel_matmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind,
                                                 const CpuMatmul::RowsRead& rows_read, bool full_int8 = false);

// The panel format that holds weights of `kind` (cpu_matmul_panel.cpp).
panel::Format panel_format(MatmulKind kind);

// Rows of the weight per packing block: a multiple of every column blocking of oneDNN (16, 32, 64)
// and of the panels (16), so that each block lands in whole blocks of the packed layout.
constexpr int64_t kPackRows = 4096;

}  // namespace lorascope::ops
