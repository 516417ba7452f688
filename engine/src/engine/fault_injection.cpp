#include "engine/fault_injection.h"

#include <atomic>
#include <mutex>

namespace lorascope::engine_detail {

namespace {

std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
FaultHook g_hook;

}  // namespace

const char* to_string(FaultPoint point) {
    switch (point) {
        case FaultPoint::OnToken: return "on_token";
        case FaultPoint::OnFinish: return "on_finish";
        case FaultPoint::StatsListener: return "stats listener";
        case FaultPoint::DecodeStep: return "decode step";
        case FaultPoint::Prefill: return "prefill";
        case FaultPoint::CacheJoin: return "cache join";
        case FaultPoint::CacheLeave: return "cache leave";
        case FaultPoint::AdapterAcquire: return "adapter acquire";
        case FaultPoint::Choose: return "choose";
        case FaultPoint::Accept: return "accept";
    }
    return "?";
}

void set_fault_hook(FaultHook hook) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_hook = std::move(hook);
    g_enabled.store(static_cast<bool>(g_hook), std::memory_order_relaxed);
}

void fault_point(FaultPoint point, const std::vector<RequestId>& involved) {
    if (!g_enabled.load(std::memory_order_relaxed)) return;
    FaultHook hook;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        hook = g_hook;
    }
    if (hook) hook(point, involved);
}

}  // namespace lorascope::engine_detail
