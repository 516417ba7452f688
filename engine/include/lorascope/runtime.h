// Facts about the compute runtime, for `info`, benchmarks and the GUI's status line.
#pragma once

#include <string>

namespace lorascope {

struct RuntimeInfo {
    std::string torch_version;
    int intra_op_threads = 1;
    bool cuda_available = false;
    int cuda_device_count = 0;
    std::string parallel_info;  // ATen's own report (OpenMP, MKL/BLAS)
    std::string cpu_gemm;       // what CPU float32 linears multiply with: "onednn" or "aten"
};

RuntimeInfo runtime_info();

// ATen's thread count is per OS thread (OpenMP): call this on the thread that will compute.
// n <= 0 means "all cores".
void set_compute_threads(int n);

// Grad mode and inference mode are thread-local too; engine threads call this once at start.
void enter_inference_mode_for_this_thread();

}  // namespace lorascope
