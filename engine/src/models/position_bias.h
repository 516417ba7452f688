// Additive attention biases: T5 relative position buckets, BLOOM ALiBi, padding and causal masks.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

namespace lorascope::models {

// T5's bucketing of (key position - query position), computed with the same tensor ops as HF so
// that the float log rounds identically. Bidirectional in the encoder, causal in the decoder.
at::Tensor t5_relative_buckets(const at::Tensor& relative_position, bool bidirectional, int64_t num_buckets,
                               int64_t max_distance);

// ALiBi slopes as BLOOM computes them, including the extra slopes of a non-power-of-two head count.
at::Tensor alibi_slopes(int64_t heads, at::TensorOptions options);

// Queries of row b sit at positions past[b] + i (i < T); keys occupy slots [0, L). A key is visible
// when its slot is <= the query position and, with a sliding `window`, > query position - window.
// Returns an additive [B, 1, T, L] mask, or an undefined tensor when nothing is masked (equal rows,
// one new token each, none past the window).
at::Tensor causal_mask(const std::vector<int64_t>& past, int64_t T, int64_t L, at::TensorOptions options,
                       std::optional<int64_t> window = std::nullopt);

// Additive [B, 1, 1, S] mask hiding slots >= lengths[b]; undefined when every row fills S.
at::Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t S, at::TensorOptions options);

// Query positions past[b] + i as a [B, T] long tensor (decoder positions of each row).
at::Tensor query_positions(const std::vector<int64_t>& past, int64_t T, const at::Device& device);

}  // namespace lorascope::models
