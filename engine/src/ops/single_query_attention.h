// Attention for one query position per row (a decoding step) on the CPU in float32, over keys and
// values stored in float32 or (the paged cache under reduced-precision products) bfloat16.
//
// The generic path computes q.k and p.v as B*H tiny matrix products; OpenBLAS packs the K and V
// operands of every one of them, which cost a decoding step more than the products themselves
// (profile of a t5-small-shaped batch of 32: a third of the decoder's time). Here each (row, head)
// reads its keys and values once, in place, with no packing and no temporaries.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace lorascope::ops {

// True when attend_single_query() handles these operands: CPU float32, one query position, and
// each head's D values contiguous in q, k and v.
bool single_query_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// q [B, H, 1, D], k and v [B, H, L, D] (any strides over B, H, L), bias broadcastable to
// [B, H, 1, L] or undefined. Returns softmax(score_scale * q.k + bias) v as [B, 1, H*D], the
// layout attend() returns.
//
// `valid`, when given, holds per row b a length n_b: the bias masks every position from n_b on
// (right-padded encoder rows, cache slots past a shorter row's end). Those keys are not read:
// their scores are -inf, so they get exactly the probability 0 that the mask gave them and the
// result is bit-identical. It matters because these reads are what a decoding step's attention
// costs: cross-attention reads every row's keys up to the longest prompt in the batch.
at::Tensor attend_single_query(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                               double score_scale, const std::vector<int64_t>* valid = nullptr);

// The same over a paged cache (models/kv_pool.h): pool_keys/pool_values [blocks, Hkv, block, D], row
// b's position l at [table[b * width + l / block], h, l % block], and row b reads exactly its
// valid[b] (1..L) positions; positions past them are not read. `bias` broadcasts to [B, H, 1, L].
// With grouped-query attention (Hkv < H, H a multiple of it) query head h reads key/value head
// h / (H / Hkv), and each key/value head is read once for its whole group.
bool paged_single_query_applies(const at::Tensor& q, const at::Tensor& pool_keys);
at::Tensor attend_single_query_paged(const at::Tensor& q, const at::Tensor& pool_keys, const at::Tensor& pool_values,
                                     const std::vector<int32_t>& table, int64_t width, int64_t block,
                                     const std::vector<int64_t>& valid, int64_t L, const at::Tensor& bias,
                                     double score_scale);

}  // namespace lorascope::ops
