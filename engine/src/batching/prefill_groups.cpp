#include "batching/prefill_groups.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace lorascope::batching {

std::vector<std::vector<size_t>> prefill_groups(const std::vector<int64_t>& prompt_tokens,
                                                const std::vector<int64_t>& rows, int64_t per_pass_tokens,
                                                int64_t max_pass_positions) {
    if (prompt_tokens.size() != rows.size()) throw std::invalid_argument("prefill_groups: one row count per prompt");
    const size_t n = prompt_tokens.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    // Stable: equal lengths keep their queue order.
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return prompt_tokens[a] < prompt_tokens[b]; });

    // best[i]: least cost of the first i requests in sorted order; a pass is a contiguous run of
    // the sorted order (an optimal split never interleaves lengths), padded to its last member.
    std::vector<int64_t> best(n + 1, std::numeric_limits<int64_t>::max());
    std::vector<size_t> start(n + 1, 0);
    best[0] = 0;
    for (size_t end = 1; end <= n; ++end) {
        int64_t pass_rows = 0;
        const int64_t longest = prompt_tokens[order[end - 1]];
        for (size_t begin = end; begin-- > 0;) {
            pass_rows += rows[order[begin]];
            // Going further back only adds rows under the same longest prompt.
            if (max_pass_positions > 0 && begin + 1 < end && pass_rows * longest > max_pass_positions) break;
            const int64_t cost = best[begin] + pass_rows * longest + per_pass_tokens;
            if (cost < best[end]) {
                best[end] = cost;
                start[end] = begin;
            }
        }
    }
    std::vector<std::vector<size_t>> passes;
    for (size_t end = n; end > 0; end = start[end])
        passes.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start[end]),
                            order.begin() + static_cast<std::ptrdiff_t>(end));
    std::reverse(passes.begin(), passes.end());
    return passes;
}

}  // namespace lorascope::batching
