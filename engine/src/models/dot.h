// The dot product our CPU kernels share.
#pragma once

#include <cstdint>

namespace lorascope::models {

// Eight partial sums, which the compiler keeps in one vector register. Inline on purpose: callers
// are target_clones functions (AVX2+FMA and the baseline ISA), and inlined into each clone it is
// vectorised for that clone's instruction set; a call per dot product cost as much as the work.
inline float dot(const float* a, const float* b, int64_t n) {
    float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) partial[j] += a[i + j] * b[i + j];
    float sum = 0;
    for (; i < n; ++i) sum += a[i] * b[i];
    for (float p : partial) sum += p;
    return sum;
}

}  // namespace lorascope::models
