#include "ops/row_argmax.h"

#include <algorithm>
#include <cmath>

#include "ops/thread_pool.h"

namespace lorascope::ops {

namespace {

// The first maximal index, or the first NaN's. The first loop's compare is false for NaN (and
// branch-free OR-ing of x != x notes one), so a row without NaN is one pass.
int64_t argmax_row(const float* x, int64_t n) {
    float best = x[0];
    int64_t at = 0;
    bool nan = x[0] != x[0];
    for (int64_t k = 1; k < n; ++k) {
        const float v = x[k];
        nan |= v != v;
        if (v > best) {
            best = v;
            at = k;
        }
    }
    if (!nan) return at;
    for (int64_t k = 0; k < n; ++k)
        if (std::isnan(x[k])) return k;
    return at;
}

}  // namespace

void argmax_rows(const float* x, int64_t rows, int64_t cols, int64_t ld, int64_t* out) {
    // A chunk of at least ~32k values: a parallel region costs a few microseconds.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(cols, 1));
    parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = argmax_row(x + i * ld, cols);
    });
}

}  // namespace lorascope::ops
