#include "lorascope/runtime.h"

#include "runtime/compute_choice.h"
#include "ops/cpu_gemm.h"
#include "ops/cpu_matmul.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>

#include <string>
#include <thread>

namespace lorascope {

RuntimeInfo runtime_info() {
    RuntimeInfo info;
    info.torch_version = TORCH_VERSION;
    info.intra_op_threads = at::get_num_threads();
    info.cuda_available = at::hasCUDA();
    // Through ATen's hooks, so that a CPU-only LibTorch (Debian's) answers 0 without CUDA headers.
    info.cuda_device_count = info.cuda_available ? at::detail::getCUDAHooks().getNumGPUs() : 0;
    info.parallel_info = at::get_parallel_info();
    info.cpu_gemm = !ops::cpu_packing_disabled() && ops::cpu_matmul_available(ops::MatmulKind::Float32) ? "onednn-packed"
                                                                                     : ops::cpu_gemm_backend();
    return info;
}

std::vector<ComputeType> cpu_compute_types() {
    const struct {
        ops::MatmulKind kind;
        const char* what;
    } kinds[] = {
        {ops::MatmulKind::Float32, "float32 weights packed at load, float32 products (Hugging Face's numerics)"},
        {ops::MatmulKind::Bfloat16,
         "bfloat16 weights, bfloat16 products summed in float32, a bfloat16 KV cache; the rest in float32"},
        {ops::MatmulKind::Int8, "int8 weights per output channel, activations per row, int32 sums, a bfloat16 KV "
                                "cache; the rest in float32"},
    };
    std::vector<ComputeType> out;
    for (const auto& k : kinds) {
        ComputeType t;
        t.name = ops::matmul_kind_name(k.kind);
        std::string why;
        t.available = ops::cpu_matmul_available(k.kind, &why);
        t.detail = t.available ? k.what : why;
        t.kv_cache = runtime::auto_cpu_cache_dtype(k.kind) == at::kBFloat16 ? "bfloat16" : "float32";
        if (k.kind == ops::MatmulKind::Float32 && !t.available) {
            t.available = true;  // float32 always runs, unpacked
            t.detail = "float32 through ATen (" + why + ")";
        }
        out.push_back(std::move(t));
    }
    return out;
}

const char* int8_accuracy_note() {
    // Measured by scripts/bench-peers --accuracy and tests/demo (docs/benchmarks.md, 2026-12-01).
    return "int8 costs little accuracy: against Hugging Face float32, chosen-token log-probabilities differ by "
           "about 0.01 on average, its bfloat16 KV cache included (CTranslate2 int8: about the same), and the demo "
           "pack's held-out exact match moves by at most 0.02";
}

void set_compute_threads(int n) {
    if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    at::set_num_threads(n);
}

void enter_inference_mode_for_this_thread() {
    // No autograd bookkeeping on engine threads: every tensor is an inference tensor.
    c10::AutoGradMode no_grad(false);
    c10::GradMode::set_enabled(false);
}

}  // namespace lorascope
