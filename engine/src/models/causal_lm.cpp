#include "models/causal_lm.h"

#include <algorithm>
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

std::unique_ptr<CausalLM> CausalLM::load_llama(const ModelConfig& config, const GenerationConfig& generation,
                                               std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                               std::optional<ops::MatmulKind> packing) {
    const LlamaConfig& c = config.llama();
    const std::string where = store->directory() + "/config.json";
    std::unique_ptr<CausalLM> m(new CausalLM());
    m->init_common(config, generation, options, store->directory(), c.vocab_size);
    const int64_t d = c.hidden_size, H = c.num_attention_heads, Hkv = c.num_key_value_heads, D = c.head_dim;
    const int64_t F = c.intermediate_size;
    const double eps = c.rms_norm_eps;
    m->heads_ = H;
    m->head_dim_ = D;
    // MistralRotaryEmbedding (4.46) has no rope_scaling; Llama's and Qwen2's apply it.
    m->rotary_ = Rotary(c, config.model_type != "mistral", where);
    m->sliding_window_ = c.sliding_window;
    m->cache_shape_ = CacheShape{c.num_hidden_layers, Hkv, D};
    const AttentionShape shape{H, D, 1.0 / std::sqrt(static_cast<double>(D)), 1.0, Hkv};
    const Activation act = parse_activation(c.hidden_act, where);
    const bool qkv_bias = c.attention_bias || c.qkv_bias;
    ModuleBuilder b(store, m->sites_, packing);
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
        const std::string p = "model.layers." + std::to_string(i);
        TransformerBlock blk;
        blk.placement = NormPlacement::Pre;
        blk.self_norm = b.rms_norm(p + ".input_layernorm", d, eps);
        // q|k|v and gate|up each run as one product; adapters still see the modules PEFT names.
        FusedLinear qkv = b.fused({b.part(p + ".self_attn.q_proj", d, H * D, qkv_bias),
                                   b.part(p + ".self_attn.k_proj", d, Hkv * D, qkv_bias),
                                   b.part(p + ".self_attn.v_proj", d, Hkv * D, qkv_bias)});
        blk.self_attn = SelfAttention(shape, std::move(qkv), b.linear(p + ".self_attn.o_proj", H * D, d, c.attention_bias));
        blk.ffn_norm = b.rms_norm(p + ".post_attention_layernorm", d, eps);
        FusedLinear gate_up = b.fused({b.part(p + ".mlp.gate_proj", d, F, c.mlp_bias), b.part(p + ".mlp.up_proj", d, F, c.mlp_bias)});
        blk.ffn = FeedForward(std::move(gate_up), b.linear(p + ".mlp.down_proj", F, d, c.mlp_bias), act);
        m->blocks_.push_back(std::move(blk));
    }
    m->final_norm_ = b.rms_norm("model.norm", d, eps);
    m->lm_head_ = b.linear("lm_head", d, c.vocab_size, false);
    // After the head, as for BLOOM: tied weights (Qwen2.5's small models, TinyLlama's are not) are held once.
    m->word_embeddings_ = b.embedding("model.embed_tokens.weight", c.vocab_size, d);
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

at::Tensor CausalLM::attention_bias(const std::vector<int64_t>& past, int64_t T, int64_t L) const {
    at::Tensor bias;
    if (alibi_slopes_.defined()) {
        // Rows are left-aligned in their blocks, so a key's ALiBi position is its position in the row:
        // the same value BLOOM derives from the cumulative attention mask of a left-padded row.
        const auto slot_opts = at::TensorOptions().dtype(options_.dtype()).device(options_.device());
        bias = (alibi_slopes_.view({heads_, 1}) * at::arange(L, slot_opts).view({1, L})).view({1, heads_, 1, L});
    }
    at::Tensor mask = causal_mask(past, T, L, options_, sliding_window_);
    if (!mask.defined()) return bias;
    return bias.defined() ? bias + mask : mask;
}

at::Tensor CausalLM::forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which, const LoraHook* lora) const {
    const int64_t B = tokens.rows(), T = tokens.ids.size(1);
    TORCH_CHECK(B == state.rows(), "CausalLM::forward: ", B, " token rows for a state of ", state.rows());
    const std::vector<int64_t> past = state.lengths();
    const int64_t L = state.max_length() + T;
    at::Tensor h = word_embeddings_.forward(tokens.ids.to(options_.device()));
    if (embeddings_norm_.defined()) h = embeddings_norm_.forward(h);
    const at::Tensor bias = attention_bias(past, T, L);
    std::optional<RotaryTables> rotary;
    if (rotary_) {
        std::vector<int64_t> lengths(past.size());
        for (size_t b = 0; b < past.size(); ++b) {
            lengths[b] = past[b] + tokens.lengths[b];
            if (b < tokens.pass_lengths.size()) lengths[b] = std::max(lengths[b], tokens.pass_lengths[b]);
        }
        rotary = rotary_->tables(past, T, lengths, options_);
    }
    const PagedStep step = state.begin_forward(tokens.lengths, T);
    for (size_t l = 0; l < blocks_.size(); ++l)
        h = blocks_[l].forward(h, bias, &step, static_cast<int64_t>(l), lora, rotary ? &*rotary : nullptr);
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
