#include "lorascope/runtime.h"

#include "runtime/compute_choice.h"
#include "ops/cpu_gemm.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_matmul.h"
#include "ops/thread_pool.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>

#include <string>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace lorascope {

RuntimeInfo runtime_info() {
    RuntimeInfo info;
    info.torch_version = TORCH_VERSION;
    info.intra_op_threads = at::get_num_threads();
    info.cuda_available = at::hasCUDA();
    // Through ATen's hooks, so that a CPU-only LibTorch (Debian's) answers 0 without CUDA headers.
    info.cuda_device_count = info.cuda_available ? at::detail::getCUDAHooks().getNumGPUs() : 0;
    info.parallel_info = at::get_parallel_info();
    info.cpu_isa = ops::cpu_isa_description();
    if (ops::cpu_packing_disabled())
        info.cpu_gemm = ops::cpu_gemm_backend();
    else
        info.cpu_gemm = ops::cpu_matmul_runs_on_pool(ops::MatmulKind::Float32) ? "panel-packed" : "onednn-packed";
    return info;
}

std::vector<ComputeType> cpu_compute_types() {
    std::vector<ComputeType> out;
    for (ops::MatmulKind kind : {ops::MatmulKind::Float32, ops::MatmulKind::Bfloat16, ops::MatmulKind::Int8,
                                 ops::MatmulKind::Int4}) {
        ComputeType t;
        t.name = ops::matmul_kind_name(kind);
        t.available = true;  // our panel kernels run every kind on any CPU
        t.kv_cache = runtime::auto_cpu_cache_dtype(kind) == at::kBFloat16 ? "bfloat16" : "float32";
        t.detail = ops::cpu_matmul_description(kind) +
                   (kind == ops::MatmulKind::Float32 ? "" : ", a " + t.kv_cache + " KV cache; the rest in float32");
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
    // Our kernels' pool (ops/thread_pool.h): its workers' own OpenMP teams are one thread, so that
    // ATen or oneDNN called from a chunk runs there instead of starting a team per worker.
    ops::set_pool_worker_init([] {
        at::get_num_threads();  // ATen's lazy per-thread set-up first, or it would undo the line below
#ifdef _OPENMP
        omp_set_num_threads(1);  // this thread's team only (at::set_num_threads would change ATen's default too)
#endif
    });
    ops::set_pool_threads(n);
}

void enter_inference_mode_for_this_thread() {
    // No autograd bookkeeping on engine threads: every tensor is an inference tensor.
    c10::AutoGradMode no_grad(false);
    c10::GradMode::set_enabled(false);
}

}  // namespace lorascope
