#include "models/causal_lm.h"

#include <cmath>

#include "lorascope/error.h"
#include "models/module_builder.h"
#include "models/position_bias.h"

namespace lorascope::models {

std::unique_ptr<CausalLM> CausalLM::load_bloom(const ModelConfig& config, const GenerationConfig& generation,
                                               std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                              std::optional<ops::MatmulKind> packing) {
    const BloomConfig& c = config.bloom();
    std::unique_ptr<CausalLM> m(new CausalLM());
    m->init_common(config, generation, options, store->directory(), c.vocab_size);
    if (c.hidden_size % c.n_head != 0)
        throw Error(ErrorKind::Format, store->directory() + "/config.json", "hidden_size is not a multiple of n_head");
    const int64_t d = c.hidden_size;
    m->heads_ = c.n_head;
    m->head_dim_ = d / c.n_head;
    const double eps = c.layer_norm_epsilon;
    ModuleBuilder b(store, m->sites_, packing);
    m->embeddings_norm_ = b.layer_norm("transformer.word_embeddings_layernorm", d, eps);
    m->alibi_slopes_ = alibi_slopes(c.n_head, options);
    m->cache_shape_ = CacheShape{c.n_layer, m->heads_, m->head_dim_};
    const AttentionShape shape{m->heads_, m->head_dim_, 1.0 / std::sqrt(static_cast<double>(m->head_dim_)), 1.0};
    const Activation act = Activation::GeluTanh;
    for (int64_t i = 0; i < c.n_layer; ++i) {
        const std::string p = "transformer.h." + std::to_string(i);
        TransformerBlock blk;
        blk.placement = c.apply_residual_connection_post_layernorm ? NormPlacement::PreResidualFromNorm : NormPlacement::Pre;
        blk.self_norm = b.layer_norm(p + ".input_layernorm", d, eps);
        blk.self_attn = SelfAttention(shape, QkvLayout::PerHead, b.linear(p + ".self_attention.query_key_value", d, 3 * d, true),
                                      b.linear(p + ".self_attention.dense", d, d, true));
        blk.ffn_norm = b.layer_norm(p + ".post_attention_layernorm", d, eps);
        blk.ffn = FeedForward(b.linear(p + ".mlp.dense_h_to_4h", d, 4 * d, true), b.linear(p + ".mlp.dense_4h_to_h", 4 * d, d, true),
                              act);
        m->blocks_.push_back(std::move(blk));
    }
    m->final_norm_ = b.layer_norm("transformer.ln_f", d, eps);
    m->lm_head_ = b.linear("lm_head", d, c.vocab_size, false);
    // After the head: with tied weights (BLOOM's usual case) the table is held once.
    m->word_embeddings_ = b.embedding("transformer.word_embeddings.weight", c.vocab_size, d);
    return m;
}

DecodeState CausalLM::start(const TokenBatch& prompts, const LoraHook*, std::shared_ptr<KvPool> pool) const {
    for (int64_t n : prompts.lengths)
        if (n < 1) throw Error(ErrorKind::InvalidArgument, "a decoder-only prompt needs at least one token");
    const int64_t B = prompts.rows(), S = prompts.ids.defined() ? prompts.ids.size(1) : 0;
    if (!pool) pool = make_pool(B * ((S + KvPool::kBlockSize - 1) / KvPool::kBlockSize + 2), /*growable=*/true);
    DecodeState state(std::move(pool));
    for (int64_t b = 0; b < B; ++b) state.add_row();
    return state;
}

at::Tensor CausalLM::forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which, const LoraHook* lora) const {
    const int64_t B = tokens.rows(), T = tokens.ids.size(1);
    TORCH_CHECK(B == state.rows(), "CausalLM::forward: ", B, " token rows for a state of ", state.rows());
    const std::vector<int64_t> past = state.lengths();
    const int64_t L = state.max_length() + T;
    at::Tensor h = embeddings_norm_.forward(word_embeddings_.forward(tokens.ids.to(options_.device())));
    // Rows are left-aligned in their blocks, so a key's ALiBi position is its position in the row:
    // the same value BLOOM derives from the cumulative attention mask of a left-padded row.
    const auto slot_opts = at::TensorOptions().dtype(options_.dtype()).device(options_.device());
    at::Tensor bias = (alibi_slopes_.view({heads_, 1}) * at::arange(L, slot_opts).view({1, L})).view({1, heads_, 1, L});
    at::Tensor mask = causal_mask(past, T, L, options_);
    if (mask.defined()) bias = bias + mask;
    const PagedStep step = state.begin_forward(tokens.lengths, T);
    for (size_t l = 0; l < blocks_.size(); ++l) h = blocks_[l].forward(h, bias, &step, static_cast<int64_t>(l), lora);
    state.advance(tokens.lengths);
    if (which == LogitsAt::None) return at::Tensor();

    if (which == LogitsAt::LastValid) {
        std::vector<int64_t> last;
        for (int64_t n : tokens.lengths) last.push_back(n - 1);
        h = (T == 1 ? h.select(1, 0) : gather_positions(h, last)).unsqueeze(1);
    }
    at::Tensor logits = lm_head_.forward(final_norm_.forward(h), lora);
    if (which == LogitsAt::LastValid) logits = logits.squeeze(1);
    return logits.scalar_type() == at::kFloat ? logits : logits.to(at::kFloat);
}

}  // namespace lorascope::models
