#include "lorascope/kernel_profile.h"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <algorithm>
#include <map>
#include <set>

#include "lorascope/error.h"

// The Kineto C++ entry points (prepareProfiler/enableProfiler/disableProfiler with activity sets)
// took their present form in LibTorch 2.0; Debian's 1.13 builds without them.
#if TORCH_VERSION_MAJOR >= 2
#define LORASCOPE_HAVE_KINETO_API 1
#include <torch/csrc/autograd/profiler_kineto.h>
#else
#define LORASCOPE_HAVE_KINETO_API 0
#endif

namespace lorascope {

bool KernelProfile::available() { return LORASCOPE_HAVE_KINETO_API != 0; }

#if LORASCOPE_HAVE_KINETO_API

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

namespace {

std::set<ActivityType> activities() {
    // Device activities come from CUPTI, which sees every thread: the engine thread's kernels are
    // counted although the profile is started from the caller's thread. CPU operators are only
    // recorded on the starting thread, so they are not counted.
    std::set<ActivityType> set{ActivityType::CPU};
    if (at::hasCUDA()) set.insert(ActivityType::CUDA);
    return set;
}

}  // namespace

void KernelProfile::start() {
    if (running_) return;
    const ProfilerConfig config(ProfilerState::KINETO);
    profiler::prepareProfiler(config, activities());
    profiler::enableProfiler(config, activities());
    running_ = true;
}

KernelCounts KernelProfile::stop() {
    KernelCounts counts;
    if (!running_) return counts;
    running_ = false;
    std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
    std::map<std::string, int64_t> by_name;
    for (const auto& event : result->events()) {
        if (event.deviceType() == c10::DeviceType::CPU) continue;
        const std::string name = event.name();
        if (name.rfind("Memcpy", 0) == 0 || name.rfind("memcpy", 0) == 0) {
            ++counts.memcpy;
        } else if (name.rfind("Memset", 0) == 0 || name.rfind("memset", 0) == 0) {
            ++counts.memset;
        } else {
            ++counts.kernels;
            ++by_name[name];
        }
    }
    std::vector<std::pair<std::string, int64_t>> sorted(by_name.begin(), by_name.end());
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (sorted.size() > 10) sorted.resize(10);
    counts.top_kernels = std::move(sorted);
    return counts;
}

KernelProfile::~KernelProfile() {
    if (!running_) return;
    try {
        profiler::disableProfiler();
    } catch (...) {
        // Destructors must not throw; a profile nobody reads can be dropped.
    }
}

#else

void KernelProfile::start() {
    throw Error(ErrorKind::Unsupported, "--profile needs LibTorch 2.x (its Kineto profiler); this build uses " +
                                            std::string(TORCH_VERSION));
}

KernelCounts KernelProfile::stop() { return {}; }

KernelProfile::~KernelProfile() = default;

#endif

}  // namespace lorascope
