// Decoder-only language models: BLOOM (ALiBi, fused per-head query_key_value, LayerNorm, GELU) and
// the Llama family — Llama, Mistral, Qwen2 — (rotary positions, grouped-query attention, RMSNorm,
// SwiGLU, an optional sliding window). One forward pass for both: they differ only in how a layer is
// built and in how positions enter (an additive bias, or rotary embeddings of q and k).
#pragma once

#include <memory>
#include <optional>

#include "weights/weight_store.h"
#include "models/model.h"
#include "models/rotary.h"
#include "models/transformer_block.h"

namespace lorascope::models {

class CausalLM : public Model {
public:
    static std::unique_ptr<CausalLM> load_bloom(const ModelConfig& config, const GenerationConfig& generation,
                                                std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                                std::optional<ops::MatmulKind> packing = std::nullopt);
    // model_type llama, mistral or qwen2 (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM
    // checkpoints, or the bare *Model without the "model." prefix and head when tied).
    static std::unique_ptr<CausalLM> load_llama(const ModelConfig& config, const GenerationConfig& generation,
                                                std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                                std::optional<ops::MatmulKind> packing = std::nullopt);

    DecodeState start(const TokenBatch& prompts, const LoraHook* lora = nullptr,
                      std::shared_ptr<KvPool> pool = nullptr) const override;
    at::Tensor forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which,
                       const LoraHook* lora = nullptr) const override;

    const Rotary* rotary() const { return rotary_ ? &*rotary_ : nullptr; }

private:
    CausalLM() = default;
    // The additive bias of a pass: ALiBi and the causal (and sliding-window) mask.
    at::Tensor attention_bias(const std::vector<int64_t>& past, int64_t T, int64_t L) const;

    int64_t heads_ = 0, head_dim_ = 0;
    Embedding word_embeddings_;
    Norm embeddings_norm_;          // BLOOM
    at::Tensor alibi_slopes_;       // BLOOM: [H]
    std::optional<Rotary> rotary_;  // Llama family
    std::optional<int64_t> sliding_window_;
    std::vector<TransformerBlock> blocks_;
    Norm final_norm_;
    Linear lm_head_;
};

}  // namespace lorascope::models
