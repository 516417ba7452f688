#include "runtime/compute_choice.h"

#include <ATen/ATen.h>

#include <optional>

#include "lorascope/error.h"
#include "ops/cpu_gemm.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_matmul.h"

namespace lorascope::runtime {

namespace {

// What --dtype means on each device. On the CPU, float32, bfloat16, int8 and int4 name the type of
// the linears' packed weights and products (ops/cpu_matmul.h); everything else runs in float32.
// Elsewhere the whole model is converted to the dtype, as before (int8 and int4 are CPU-only).
struct ProductChoice {
    at::ScalarType dtype = at::kFloat;
    std::optional<ops::MatmulKind> cpu_matmul;
};

ProductChoice parse_compute(const std::string& name, const at::Device& device) {
    auto packed = [](ops::MatmulKind kind) { return ProductChoice{at::kFloat, kind}; };
    const bool cpu = device.is_cpu();
    if (name == "float32" || name == "fp32") {
        if (!cpu || ops::cpu_packing_disabled()) return {at::kFloat, std::nullopt};
        return packed(ops::MatmulKind::Float32);
    }
    if (name == "float16" || name == "fp16") {
        // Debian's LibTorch 1.13 has no float16 CPU kernels for addmm or layer norm: every
        // request used to fail at its first prefill ("addmm_impl_cpu_ not implemented for 'Half'").
        if (cpu)
            throw Error(ErrorKind::Unsupported,
                        "dtype '" + name + "' on the CPU: this LibTorch has no float16 CPU kernels "
                        "(matrix products, layer norm); use bfloat16 or float32 here, float16 on CUDA");
        return {at::kHalf, std::nullopt};
    }
    if (name == "bfloat16" || name == "bf16") return cpu ? packed(ops::MatmulKind::Bfloat16) : ProductChoice{at::kBFloat16, {}};
    if (name == "int8" || name == "int4") {
        if (!cpu)
            throw Error(ErrorKind::Unsupported,
                        "dtype '" + name + "' is a CPU compute type; on " + device.str() + " use float16 or bfloat16");
        return packed(name == "int8" ? ops::MatmulKind::Int8 : ops::MatmulKind::Int4);
    }
    throw Error(ErrorKind::InvalidArgument, "unknown dtype '" + name + "' (float32, bfloat16, int8, int4 or float16)");
}

at::Device parse_device(const std::string& name) {
    if (name == "cpu") return at::kCPU;
    if (name.rfind("cuda", 0) == 0) {
        if (!at::hasCUDA())
            throw Error(ErrorKind::Unsupported,
                        "device '" + name + "' requested but this LibTorch has no usable CUDA device");
        return at::Device(name);
    }
    throw Error(ErrorKind::InvalidArgument, "unknown device '" + name + "' (cpu or cuda[:N])");
}

// "auto": bfloat16 under the CPU's reduced-precision products, the model's type otherwise. An
// int8 user has chosen speed and memory over HF-exact numbers already; the float32 cache was then
// a third of W3's peak memory and half of what a decoding step's attention reads (W3 int8: 818 MiB
// peak, of which 288 MiB cache). float32 keeps the cache, and HF parity, exact.
std::optional<at::ScalarType> parse_cache(const std::string& name, const ProductChoice& compute,
                                          const at::Device& device) {
    if (name == "auto" || name.empty()) {
        if (!compute.cpu_matmul) return std::nullopt;  // the model's type
        return auto_cpu_cache_dtype(*compute.cpu_matmul);
    }
    if (name == "float32" || name == "fp32") return at::kFloat;
    if (name == "bfloat16" || name == "bf16") return at::kBFloat16;
    if (name == "float16" || name == "fp16") {
        if (device.is_cpu())
            throw Error(ErrorKind::Unsupported, "kv cache dtype 'float16' on the CPU: use bfloat16 "
                                                "(the CPU kernel reads bfloat16 and float32)");
        return at::kHalf;
    }
    throw Error(ErrorKind::InvalidArgument,
                "unknown kv cache dtype '" + name + "' (auto, float32, bfloat16, or float16 on CUDA)");
}

}  // namespace

at::ScalarType auto_cpu_cache_dtype(ops::MatmulKind kind) {
    return kind == ops::MatmulKind::Float32 ? at::kFloat : at::kBFloat16;
}

ComputeChoice choose_compute(const std::string& dtype, const std::string& device, const std::string& kv_cache_dtype) {
    ops::check_cpu_isa_setting();  // a misspelt LORASCOPE_CPU_ISA is an error, not a silent full-speed run
    ComputeChoice choice;
    choice.device = parse_device(device);
    const ProductChoice products = parse_compute(dtype, choice.device);
    choice.dtype = products.dtype;
    choice.cpu_matmul = products.cpu_matmul;
    choice.kv_cache_dtype = parse_cache(kv_cache_dtype, products, choice.device);
    return choice;
}

}  // namespace lorascope::runtime
