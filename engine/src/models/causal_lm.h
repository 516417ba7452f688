// Decoder-only language model: BLOOM (ALiBi, fused per-head query_key_value, tied LM head).
#pragma once

#include <memory>

#include "weights/weight_store.h"
#include "models/model.h"
#include "models/transformer_block.h"

namespace lorascope::models {

class CausalLM : public Model {
public:
    static std::unique_ptr<CausalLM> load_bloom(const ModelConfig& config, const GenerationConfig& generation,
                                                std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                              std::optional<ops::MatmulKind> packing = std::nullopt);

    DecodeState start(const TokenBatch& prompts, const LoraHook* lora = nullptr,
                      std::shared_ptr<KvPool> pool = nullptr) const override;
    at::Tensor forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which,
                       const LoraHook* lora = nullptr) const override;

private:
    CausalLM() = default;

    int64_t heads_ = 0, head_dim_ = 0;
    Embedding word_embeddings_;
    Norm embeddings_norm_;
    at::Tensor alibi_slopes_;   // [H]
    std::vector<TransformerBlock> blocks_;
    Norm final_norm_;
    Linear lm_head_;
};

}  // namespace lorascope::models
