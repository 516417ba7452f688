// fp32 matrix products on the CPU through oneDNN's sgemm instead of ATen's BLAS call.
//
// Why: Debian's LibTorch sends x @ W^T to OpenBLAS, which re-packs the weight on every call and
// splits the small decode products (32 rows against a 512x2048 weight) badly over threads: on the
// 2-core machine a two-thread t5-small decode step ran only 1.3x faster than one thread. oneDNN's
// sgemm (the library LibTorch itself links, and CTranslate2's CPU backend on AMD) scales 1.6-1.9x
// on the same shapes and is 10-30% faster at one thread (docs/benchmarks.md has the measurements).
#pragma once

#include <ATen/ATen.h>

namespace lorascope::ops {

// True when linear_cpu below may be used: a CPU float32 input and weight, a build with oneDNN,
// and LORASCOPE_CPU_GEMM not set to "torch" (the switch exists for A/B measurements).
bool cpu_gemm_applies(const at::Tensor& x, const at::Tensor& weight);

// y = x W^T (+ bias): x [..., in] (last dimension contiguous), weight [out, in] contiguous,
// bias [out] or undefined. Returns a new contiguous [..., out] tensor.
at::Tensor linear_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// Which backend the CPU linears use in this process: "onednn" or "aten".
const char* cpu_gemm_backend();

// True when LORASCOPE_CPU_GEMM is "sgemm" or "torch": float32 CPU linears then stay unpacked
// (oneDNN's sgemm or ATen) instead of being packed at load (ops/cpu_matmul.h), for A/B runs.
bool cpu_packing_disabled();

}  // namespace lorascope::ops
