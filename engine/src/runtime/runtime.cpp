#include "lorascope/runtime.h"

#include "models/cpu_gemm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/GradMode.h>
#include <torch/version.h>

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
    info.cpu_gemm = models::cpu_gemm_backend();
    return info;
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
