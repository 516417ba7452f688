// Sizes computed from what a client asked for (new tokens, rows, KV blocks) in arithmetic that
// says when it overflows instead of wrapping: a wrapped size once turned a KV reservation negative
// and stopped admission for good (issue 26).
#pragma once

#include <cstdint>
#include <optional>

namespace lorascope::util {

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
    return out;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
    return out;
}

// ceil(a / b) for a >= 0, b > 0, without the overflow of (a + b - 1) / b.
inline int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace lorascope::util
