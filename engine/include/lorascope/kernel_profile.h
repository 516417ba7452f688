// Counts what a stretch of engine work launches on the device, through LibTorch 2.x's Kineto
// profiler, so that `lorascope-cli bench --profile` can report kernel launches per engine step
// (the number that decides whether capturing decode steps in CUDA graphs would pay off).
// Torch-free interface (part of the public API; implemented in lorascope_engine, src/runtime/).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lorascope {

struct KernelCounts {
    int64_t kernels = 0;  // device kernel launches, every thread of the process
    int64_t memcpy = 0;   // device copies (host<->device and device<->device)
    int64_t memset = 0;
    std::vector<std::pair<std::string, int64_t>> top_kernels;  // most launched first, at most 10
};

class KernelProfile {
public:
    // False for a LibTorch without the Kineto C++ API (Debian's 1.13): start() then throws
    // lorascope::Error (Unsupported).
    static bool available();

    KernelProfile() = default;
    KernelProfile(const KernelProfile&) = delete;
    KernelProfile& operator=(const KernelProfile&) = delete;
    ~KernelProfile();  // stops a running profile, discarding it

    void start();
    KernelCounts stop();

private:
    bool running_ = false;
};

}  // namespace lorascope
