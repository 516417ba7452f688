#include "batching/admission.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "util/checked_math.h"

namespace lorascope::batching {

BatchShape BatchShape::with(const Demand& d) const {
    BatchShape s = *this;
    s.rows += d.rows;
    s.max_prompt_tokens = std::max(s.max_prompt_tokens, d.prompt_tokens);
    s.max_new_tokens = std::max(s.max_new_tokens, d.max_new_tokens);
    return s;
}

int64_t BatchShape::cost() const {
    const auto positions = util::checked_add(max_prompt_tokens, max_new_tokens);
    const auto total = positions ? util::checked_mul(rows, *positions) : std::nullopt;
    return total ? *total : INT64_MAX;
}

bool malformed(const Demand& d) {
    const bool bad = d.rows < 1 || d.prompt_tokens < 0 || d.max_new_tokens < 0 || d.kv_blocks < 0;
    assert(!bad && "a malformed admission demand: the engine's budget check let it through");
    return bad;
}

bool never_fits(const Demand& d, const Limits& limits) {
    const BatchShape alone = BatchShape{}.with(d);
    return alone.rows > limits.max_batch_size || alone.cost() > limits.max_batch_tokens ||
           d.kv_blocks > limits.kv_blocks_capacity;
}

static bool fits(const BatchShape& shape, const Limits& limits) {
    return shape.rows <= limits.max_batch_size && shape.cost() <= limits.max_batch_tokens;
}

// The soft row limit of this step; an empty batch takes its first request whatever the limit.
static bool rows_allowed(const BatchShape& before, const BatchShape& grown, const Limits& limits) {
    return before.rows == 0 || grown.rows <= limits.rows_now;
}

std::vector<size_t> packed_order(const std::vector<Demand>& queue, int64_t rows, bool end_longest_first,
                                 double prompt_weight) {
    std::vector<size_t> order(queue.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    int64_t waiting = 0;
    for (const auto& d : queue) waiting = util::checked_add(waiting, std::max<int64_t>(d.rows, 0)).value_or(INT64_MAX);
    const bool end = end_longest_first && waiting <= rows;   // every one of them joins as the running rows leave
    const double weight = std::isfinite(prompt_weight) ? std::max(0.0, prompt_weight) : 0.0;
    auto work = [&](const Demand& d) {
        return static_cast<double>(d.max_new_tokens) + weight * static_cast<double>(d.prompt_tokens);
    };
    for (size_t begin = 0; begin < order.size();) {
        size_t stop = begin + 1;
        while (stop < order.size() && queue[stop].intake == queue[begin].intake) ++stop;
        std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(stop),
                         [&](size_t a, size_t b) {
                             return end ? queue[a].max_new_tokens > queue[b].max_new_tokens
                                        : work(queue[a]) < work(queue[b]);
                         });
        begin = stop;
    }
    return order;
}

AdmissionResult admit(std::deque<Demand>& queue, const BatchShape& running, const Limits& limits) {
    AdmissionResult result;
    BatchShape shape = running;
    int64_t kv_free = limits.kv_blocks_free;
    std::deque<Demand> kept;
    bool blocked = false;  // a starved request holds everything behind it
    for (auto& d : queue) {
        if (malformed(d) || never_fits(d, limits)) {
            result.rejected.push_back(d.id);
            continue;
        }
        if (!blocked) {
            const BatchShape grown = shape.with(d);
            if (fits(grown, limits) && rows_allowed(shape, grown, limits) && d.kv_blocks <= kv_free) {   // both non-negative: no overflow
                shape = grown;
                kv_free -= d.kv_blocks;
                result.admitted.push_back(d.id);
                continue;
            }
            if (++d.skipped > limits.max_skips) blocked = true;
        }
        kept.push_back(d);
    }
    queue.swap(kept);
    return result;
}

}  // namespace lorascope::batching
