// Rotary position embeddings (RoPE) of the Llama family, with every rope_scaling type that
// transformers 4.46 applies to LlamaForCausalLM / Qwen2ForCausalLM (ROPE_INIT_FUNCTIONS: default,
// linear, dynamic, yarn, longrope, llama3). The inverse frequencies are computed with the same
// ATen operations in the same order as modeling_rope_utils.py, so that they are the very floats
// Hugging Face rotates with.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "lorascope/config.h"

namespace lorascope::models {

// cos and sin of one forward pass, [B, 1, T, D] (broadcast over heads).
struct RotaryTables {
    at::Tensor cos, sin;

    // x [B, H, T, D] -> x * cos + rotate_half(x) * sin, as apply_rotary_pos_emb does.
    at::Tensor apply(const at::Tensor& x) const;
};

class Rotary {
public:
    Rotary() = default;
    // `scaling`: the config's rope_scaling when the class applies it (Mistral's rotary embedding
    // ignores it). Throws lorascope::Error (Unsupported) for a type transformers cannot build.
    Rotary(const LlamaConfig& config, bool scaling, const std::string& config_path);

    // Row b's queries sit at positions past[b] + t (t < T). Dynamic NTK scaling recomputes the
    // frequencies from the sequence length of each row's pass (`lengths[b]`: the last position + 1
    // that HF's forward pass sees), as LlamaRotaryEmbedding._dynamic_frequency_update does per call.
    // Per row, so that a request's numbers are those of HF running it alone: HF's batched pass takes
    // the longest row's length for every row (and keeps a longer earlier length until a pass shorter
    // than max_position_embeddings resets it), so its own batched output differs from alone.
    RotaryTables tables(const std::vector<int64_t>& past, int64_t T, const std::vector<int64_t>& lengths,
                        at::TensorOptions options) const;

    const at::Tensor& inv_freq() const { return inv_freq_; }  // [D / 2] float32, at load
    at::Tensor inv_freq_for_length(int64_t length) const;    // dynamic: the frequencies at this length
    double attention_scaling() const { return attention_scaling_; }
    bool dynamic() const { return dynamic_; }

private:
    int64_t dim_ = 0;
    double base_ = 10000.0;
    int64_t max_positions_ = 0;
    double factor_ = 1.0;
    bool dynamic_ = false;
    at::Tensor inv_freq_;
    double attention_scaling_ = 1.0;
};

}  // namespace lorascope::models
