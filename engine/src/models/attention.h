// Multi-head attention shared by all families. Position information enters as an additive bias on
// the scores (T5 relative buckets, BLOOM ALiBi, padding, causal and sliding-window masks), which the
// model computes once per forward pass and hands to every layer, and for the Llama family also as
// rotary embeddings applied to q and k before k is cached. Grouped-query attention (fewer key/value
// heads than query heads) caches only the key/value heads.
#pragma once

#include <ATen/ATen.h>

#include "models/linear.h"

namespace lorascope::models {

struct PagedStep;
struct RotaryTables;

// How a fused q|k|v projection lays out its output columns.
enum class QkvLayout {
    Concatenated,  // [q (H*D) | k (Hkv*D) | v (Hkv*D)]: T5, BART and Llama, fused by us at load
    PerHead,       // [H, 3, D]: BLOOM's query_key_value as trained
};

struct AttentionShape {
    int64_t heads = 0;
    int64_t head_dim = 0;
    double score_scale = 1.0;   // multiplies q.k (T5: 1; BLOOM: 1/sqrt(D))
    double query_scale = 1.0;   // multiplies q before the product (BART: 1/sqrt(D), as HF does)
    int64_t kv_heads = 0;       // key/value heads (grouped-query attention); 0: as many as `heads`

    int64_t key_value_heads() const { return kv_heads > 0 ? kv_heads : heads; }
};

class SelfAttention {
public:
    SelfAttention() = default;
    SelfAttention(AttentionShape shape, QkvLayout layout, Linear qkv, Linear out);
    SelfAttention(AttentionShape shape, FusedLinear qkv, Linear out);

    // x [B, T, d]. bias broadcasts to [B, H, T, L]. With a paged cache, this layer's new K/V are
    // written at each row's next positions and attention covers positions [0, L = step->key_length)
    // through the rows' block tables; without, L = T. `rotary`: the pass's rotary embeddings, applied
    // to q and k before k is cached.
    at::Tensor forward(const at::Tensor& x, const at::Tensor& bias, const PagedStep* step, int64_t layer,
                       const LoraHook* lora, const RotaryTables* rotary = nullptr) const;

    const AttentionShape& shape() const { return shape_; }

private:
    AttentionShape shape_;
    QkvLayout layout_ = QkvLayout::Concatenated;
    Linear qkv_single_;     // BLOOM
    FusedLinear qkv_fused_; // T5/BART
    Linear out_;
};

// Decoder-to-encoder attention: K/V come from the encoder output, computed once per request.
class CrossAttention {
public:
    CrossAttention() = default;
    CrossAttention(AttentionShape shape, Linear q, FusedLinear kv, Linear out);  // kv: k|v fused

    // Encoder output [B, S, d] -> (K, V), each [B, H, S, D], contiguous.
    std::pair<at::Tensor, at::Tensor> project_memory(const at::Tensor& encoder_out, const LoraHook* lora) const;
    // Attends to layer `layer`'s encoder memory of each row, read through the step's cross tables.
    at::Tensor forward(const at::Tensor& x, const PagedStep& step, int64_t layer, const LoraHook* lora) const;

private:
    AttentionShape shape_;
    Linear q_;
    FusedLinear kv_;
    Linear out_;
};

// softmax(scale * q k^T + bias) v for q [B, H, T, D], k/v [B, H, L, D] -> [B, T, H*D]. k/v with
// fewer heads (grouped-query attention: H a multiple of theirs) are repeated for their query heads.
// `valid` (optional, one entry per row): the bias masks row b's keys from valid[b] on; a kernel may
// skip reading them (attend_single_query does).
at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias,
                  double score_scale, const std::vector<int64_t>* valid = nullptr);

}  // namespace lorascope::models
