// Facts about the compute runtime, for `info`, benchmarks and the GUI's status line.
#pragma once

#include <string>
#include <vector>

namespace lorascope {

struct RuntimeInfo {
    std::string torch_version;
    int intra_op_threads = 1;
    bool cuda_available = false;
    int cuda_device_count = 0;
    std::string parallel_info;  // ATen's own report (OpenMP, MKL/BLAS)
    std::string cpu_gemm;       // what CPU float32 linears multiply with: "onednn-packed", "panel-packed" (our kernels), "onednn" or "aten"
    std::string cpu_isa;        // the instruction sets our kernels use, whether forced (LORASCOPE_CPU_ISA), the CPU's
};

RuntimeInfo runtime_info();

// A --dtype on the CPU and whether this build and CPU run it.
struct ComputeType {
    std::string name;     // "float32", "bfloat16", "int8", "int4"
    bool available = false;
    std::string detail;   // what the linears compute with, or why this build or CPU cannot
    std::string kv_cache; // what the KV cache stores under it by default (--kv-cache-dtype auto)
};
std::vector<ComputeType> cpu_compute_types();

// What int8 costs in accuracy, one line, as measured against Hugging Face float32 (docs/benchmarks.md).
const char* int8_accuracy_note();

// ATen's thread count is per OS thread (OpenMP): call this on the thread that will compute.
// n <= 0 means "all cores".
void set_compute_threads(int n);

// Grad mode and inference mode are thread-local too; engine threads call this once at start.
void enter_inference_mode_for_this_thread();

}  // namespace lorascope
