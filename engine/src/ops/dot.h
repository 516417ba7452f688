// The dot product our CPU kernels share.
#pragma once

#include <cstdint>
#include <cstring>

namespace lorascope::ops {

// A stored element as float: bfloat16 (its bits, as the KV cache stores them) is the high half of a
// float32, so widening is exact.
inline float widen(float x) { return x; }
inline float widen(uint16_t bfloat16_bits) {
    const uint32_t wide = static_cast<uint32_t>(bfloat16_bits) << 16;
    float x;
    std::memcpy(&x, &wide, sizeof x);
    return x;
}

// Eight partial sums, which the compiler keeps in one vector register. Inlined on purpose: callers
// are built twice (AVX2+FMA and the baseline ISA, picked at run time), and inlined into each it is
// vectorised for that build's instruction set; a call per dot product cost as much as the work.
// B is float or bfloat16 bits: the sums are the same either way, so a bfloat16 KV cache reads
// exactly as a float32 cache holding the same (rounded) values.
template <typename B>
__attribute__((always_inline)) inline float dot(const float* a, const B* b, int64_t n) {
    float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) partial[j] += a[i + j] * widen(b[i + j]);
    float sum = 0;
    for (; i < n; ++i) sum += a[i] * widen(b[i]);
    for (float p : partial) sum += p;
    return sum;
}

}  // namespace lorascope::ops
