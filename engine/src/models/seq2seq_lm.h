// Encoder-decoder language models as one structure that differs only in how positions and norms
// enter: T5 and mT5 (relative position buckets, RMS pre-norm), BART (learned positions, post-LN)
// and the types built on BART's skeleton: Marian (sinusoidal positions), mBART (pre-LN, final
// norms), Pegasus (sinusoidal, pre-LN) and M2M100/NLLB (positions counted from the pad id, pre-LN).
#pragma once

#include <memory>

#include "weights/weight_store.h"
#include "models/model.h"
#include "models/position_embedding.h"
#include "models/transformer_block.h"

namespace lorascope::models {

class ModuleBuilder;

class Seq2SeqLM : public Model {
public:
    static std::unique_ptr<Seq2SeqLM> load_t5(const ModelConfig& config, const GenerationConfig& generation,
                                              std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                              std::optional<ops::MatmulKind> packing = std::nullopt);
    static std::unique_ptr<Seq2SeqLM> load_bart(const ModelConfig& config, const GenerationConfig& generation,
                                                std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                              std::optional<ops::MatmulKind> packing = std::nullopt);

    DecodeState start(const TokenBatch& prompts, const LoraHook* lora = nullptr,
                      std::shared_ptr<KvPool> pool = nullptr) const override;
    int64_t source_vocab_size() const override { return source_vocab_; }
    int64_t encoder_units() const override { return static_cast<int64_t>(encoder_.size()) + 1; }
    EncoderWork begin_encoder(const TokenBatch& prompts) const override;
    void run_encoder(EncoderWork& work, int64_t units, const LoraHook* lora = nullptr) const override;
    DecodeState finish_encoder(EncoderWork& work, const LoraHook* lora = nullptr,
                               std::shared_ptr<KvPool> pool = nullptr) const override;
    at::Tensor forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which,
                       const LoraHook* lora = nullptr) const override;

private:
    Seq2SeqLM() = default;
    void load_bart_embeddings(const BartConfig& c, ModuleBuilder& b);
    // ids [B, T] at positions past[b] + t of their rows -> the first layer's input [B, T, d].
    at::Tensor embed(const at::Tensor& ids, const std::vector<int64_t>& past, bool decoder) const;
    at::Tensor t5_bias(const at::Tensor& relative, bool decoder) const;
    void check_length(int64_t length, bool decoder) const;

    bool t5_ = false;
    int64_t d_model_ = 0;
    int64_t heads_ = 0, head_dim_ = 0;
    int64_t source_vocab_ = 0;
    Embedding encoder_embed_, decoder_embed_;  // one table unless Marian's vocabularies are separate
    double embed_scale_ = 1.0;                 // BART family: scale_embedding
    // BART family: absolute positions, and BART's / mBART's LayerNorm right after the embeddings.
    PositionTable encoder_positions_, decoder_positions_;
    Norm encoder_embed_norm_, decoder_embed_norm_;
    // T5: bucket tables [buckets, H] of the first layer of each stack, shared by all layers.
    at::Tensor encoder_relative_bias_, decoder_relative_bias_;
    int64_t buckets_ = 32, max_distance_ = 128;
    std::vector<TransformerBlock> encoder_, decoder_;
    Norm encoder_final_norm_, decoder_final_norm_;  // T5, mBART, Pegasus, M2M100
    double output_scale_ = 1.0;                      // T5 tied: d_model ** -0.5
    Linear lm_head_;
    at::Tensor final_logits_bias_;                   // BART family, [V] or undefined
};

}  // namespace lorascope::models
