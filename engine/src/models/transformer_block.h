// One transformer layer in the three arrangements the families use, so that T5, BART, BLOOM and the
// Llama family share a single implementation of "attend, (cross-attend), feed forward, with residuals".
#pragma once

#include <ATen/ATen.h>

#include "models/attention.h"
#include "models/layers.h"

namespace lorascope::models {

struct PagedStep;
struct RotaryTables;

enum class NormPlacement {
    Pre,                  // x + f(norm(x))                      T5, BLOOM, Llama
    PreResidualFromNorm,  // norm(x) + f(norm(x))                 BLOOM apply_residual_connection_post_layernorm
    Post,                 // norm(x + f(x))                       BART
};

// What a block does about float16 overflow, as the family's HF code does (only in float16).
enum class HalfOverflowGuard {
    None,               // BLOOM, BART decoder
    ClampEachSublayer,  // T5Block: after each sublayer, clamp to +-(max or max-1000 when an inf appeared)
    ClampOnInfOrNan,    // BartEncoderLayer: clamp to +-(max-1000) when an inf or nan appeared
};

struct TransformerBlock {
    NormPlacement placement = NormPlacement::Pre;
    HalfOverflowGuard half_guard = HalfOverflowGuard::None;
    Norm self_norm;
    SelfAttention self_attn;
    bool has_cross = false;
    Norm cross_norm;
    CrossAttention cross_attn;
    Norm ffn_norm;
    FeedForward ffn;

    // h [B, T, d]. `step` (decoder blocks): the paged cache this pass writes and reads, which also
    // holds the encoder memory that seq2seq decoder blocks cross-attend to. `rotary`: the pass's
    // rotary embeddings (Llama family).
    at::Tensor forward(const at::Tensor& h, const at::Tensor& self_bias, const PagedStep* step, int64_t layer,
                       const LoraHook* lora, const RotaryTables* rotary = nullptr) const;
};

}  // namespace lorascope::models
