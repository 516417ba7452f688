// Per-request timings as this window measured them (time to first token, time per later token),
// summarised over the finished requests: what the inspector shows next to a remote server's own
// aggregates, which are the server's view of the same requests.
#pragma once

#include <optional>
#include <vector>

#include "requests/request_record.h"

namespace lorascope::ui {

struct ClientTimings {
    int finished = 0;   // requests that finished with tokens
    std::optional<double> ttft_p50_ms, ttft_p95_ms, per_token_p50_ms, per_token_p95_ms;
};

ClientTimings clientTimings(const std::vector<RequestRecord>& records);

}  // namespace lorascope::ui
