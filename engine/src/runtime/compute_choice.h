// What --dtype, --device and --kv-cache-dtype mean when a model is loaded, shared by the Engine and
// the Scorer so that generation and scoring run the same products.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "ops/cpu_matmul.h"

namespace lorascope::runtime {

struct ComputeChoice {
    at::Device device = at::kCPU;
    at::ScalarType dtype = at::kFloat;             // of the tensors and activations
    std::optional<ops::MatmulKind> cpu_matmul;     // CPU: the packed linears' type; none: ATen's path
    std::optional<at::ScalarType> kv_cache_dtype;  // none: dtype
};

// What kv_cache_dtype "auto" stores under CPU products of this kind.
at::ScalarType auto_cpu_cache_dtype(ops::MatmulKind kind);

// On the CPU, "float32", "bfloat16", "int8" and "int4" name the type of the linears' packed weights
// and products (ops/cpu_matmul.h) while norms, attention and the residual stream run in float32;
// on CUDA the whole model is converted ("float32", "float16", "bfloat16"; int8 and int4 are CPU-only).
// kv_cache_dtype: "auto" (bfloat16 under CPU int8, int4 or bfloat16 products, else the model's type),
// "float32", "bfloat16" or, on CUDA, "float16".
// Throws lorascope::Error: InvalidArgument for an unknown name, Unsupported (with the reason) for a
// type this build or CPU cannot run.
ComputeChoice choose_compute(const std::string& dtype, const std::string& device,
                             const std::string& kv_cache_dtype = "auto");

}  // namespace lorascope::runtime
