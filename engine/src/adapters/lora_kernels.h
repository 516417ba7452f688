// The CPU kernels of LoRA deltas: one adapter's y += (x A^T) BT for a list of positions.
#pragma once

#include <cstdint>

namespace lorascope::adapters {

// ys[i] += BT^T (A xs[i]) for the n positions of one adapter. A is [r, in] and BT [r, out] (the
// scaled B, transposed), both row-major and contiguous; xs[i] holds `in` floats, ys[i] `out`.
// h is n * r floats of scratch.
//
// A position's result does not depend on n or on the other positions: a few positions (decoding
// steps, the factors read from memory once for all of them) and many (prefill, the factors reused
// from cache across blocks of positions) take different loops over the same sums, in the same
// order, with the same fused multiply-adds. A request's LoRA delta is then the same whatever
// shares its batch. AVX2+FMA where the CPU has them (runtime dispatch), plain loops elsewhere.
void lora_positions(const float* A, const float* BT, int64_t r, int64_t in, int64_t out, const float* const* xs,
                    float* const* ys, int64_t n, float* h);

// The instruction sets the kernels are compiled for; lora_positions takes the best the CPU has.
enum class LoraIsa { Plain, Avx2, Avx512 };
LoraIsa lora_best_isa();
// lora_positions with a given instruction set, at most lora_best_isa() (tests reach each with it).
void lora_positions(LoraIsa isa, const float* A, const float* BT, int64_t r, int64_t in, int64_t out,
                    const float* const* xs, float* const* ys, int64_t n, float* h);

// Up to this many positions stream the factors (each row of A and BT read once for all of them);
// more are computed in blocks of four with the factors in cache.
constexpr int64_t kLoraStreamingPositions = 8;

}  // namespace lorascope::adapters
