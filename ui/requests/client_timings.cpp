#include "requests/client_timings.h"

#include <algorithm>
#include <cmath>

namespace lorascope::ui {

namespace {

// Nearest rank: the smallest value with at least q of the values at or below it.
std::optional<double> percentile(std::vector<double> v, double q) {
    if (v.empty()) return std::nullopt;
    std::sort(v.begin(), v.end());
    const size_t rank = size_t(std::ceil(q * double(v.size())));
    return v[std::min(v.size() - 1, rank > 0 ? rank - 1 : 0)];
}

}  // namespace

ClientTimings clientTimings(const std::vector<RequestRecord>& records) {
    ClientTimings t;
    std::vector<double> ttft, per_token;
    for (const RequestRecord& r : records) {
        if (r.status != RequestStatus::Finished || r.generatedTokens() == 0) continue;
        ++t.finished;
        if (const double ms = r.ttftMs(); ms >= 0) ttft.push_back(ms);
        if (const double tps = r.tokensPerSecond(); tps > 0) per_token.push_back(1000.0 / tps);
    }
    t.ttft_p50_ms = percentile(ttft, 0.5);
    t.ttft_p95_ms = percentile(ttft, 0.95);
    t.per_token_p50_ms = percentile(per_token, 0.5);
    t.per_token_p95_ms = percentile(per_token, 0.95);
    return t;
}

}  // namespace lorascope::ui
