#include "batching/prefill_plan.h"

#include <algorithm>

namespace lorascope::batching {

PrefillPlan plan_prefill(const std::vector<int64_t>& remaining, bool chunked, int64_t chunk, int64_t budget,
                         bool force_first) {
    const bool unlimited = force_first && budget <= 0;
    PrefillPlan plan;
    bool stopped = false;
    for (size_t i = 0; i < remaining.size(); ++i) {
        const int64_t left = remaining[i];
        if (left <= 0) continue;
        const int64_t piece = chunked && chunk > 0 ? std::min(left, chunk) : left;
        const bool fits = unlimited || plan.tokens + piece <= budget;
        if (!stopped && (fits || (force_first && plan.pieces.empty()))) {
            plan.pieces.push_back({i, piece});
            plan.tokens += piece;
            plan.deferred += left - piece;
        } else {
            stopped = true;
            plan.deferred += left;
        }
    }
    return plan;
}

}  // namespace lorascope::batching
