// Test-only fault injection: named points in the engine where a test can make the engine throw,
// to prove that a failure ends exactly the requests involved and nothing else (issue: an engine
// thread that cannot die). Costs one relaxed atomic load per point when no hook is set.
#pragma once

#include <functional>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::engine_detail {

enum class FaultPoint {
    OnToken,         // just before a sink's on_token
    OnFinish,        // just before a sink's on_finish
    StatsListener,   // just before the stats listener
    DecodeStep,      // a decoding forward pass over these requests' rows
    Prefill,         // an encoder pass or a prompt chunk of these requests
    CacheJoin,       // these newcomers' rows joining the running batch
    CacheLeave,      // these finished requests' rows leaving it
    AdapterAcquire,  // pinning (or reloading) this request's adapter at admission
    Choose,          // processing these requests' scores and choosing their next tokens
    Accept,          // this request taking its chosen token: detokenizing, stop strings, length
};

const char* to_string(FaultPoint point);

// The hook sees the point and the requests involved; it throws to inject a fault. Process-wide
// (every engine); null removes it. Set it only while no engine step runs.
using FaultHook = std::function<void(FaultPoint, const std::vector<RequestId>&)>;
void set_fault_hook(FaultHook hook);

// Calls the hook, if any.
void fault_point(FaultPoint point, const std::vector<RequestId>& involved);

}  // namespace lorascope::engine_detail
