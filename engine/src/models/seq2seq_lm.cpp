#include "models/seq2seq_lm.h"

#include <algorithm>
#include <cmath>

#include "lorascope/error.h"
#include "models/module_builder.h"
#include "models/position_bias.h"

namespace lorascope::models {

namespace {

std::string layer_path(const std::string& stack, int64_t i) { return stack + "." + std::to_string(i); }

FeedForward t5_ffn(ModuleBuilder& b, const std::string& p, const T5Config& c) {
    const Activation act = parse_activation(c.dense_act_fn, b.store().directory() + "/config.json");
    if (c.is_gated_act)
        return FeedForward(b.fused({b.part(p + ".wi_0", c.d_model, c.d_ff, false), b.part(p + ".wi_1", c.d_model, c.d_ff, false)}),
                           b.linear(p + ".wo", c.d_ff, c.d_model, false), act);
    return FeedForward(b.linear(p + ".wi", c.d_model, c.d_ff, false), b.linear(p + ".wo", c.d_ff, c.d_model, false), act);
}

SelfAttention fused_self_attention(ModuleBuilder& b, const std::string& p, AttentionShape shape, int64_t d,
                                   const char* q, const char* k, const char* v, const char* o, bool bias) {
    const int64_t inner = shape.heads * shape.head_dim;
    FusedLinear qkv = b.fused({b.part(p + "." + q, d, inner, bias), b.part(p + "." + k, d, inner, bias),
                               b.part(p + "." + v, d, inner, bias)});
    return SelfAttention(shape, std::move(qkv), b.linear(p + "." + o, inner, d, bias));
}

CrossAttention cross_attention(ModuleBuilder& b, const std::string& p, AttentionShape shape, int64_t d,
                               const char* q, const char* k, const char* v, const char* o, bool bias) {
    const int64_t inner = shape.heads * shape.head_dim;
    return CrossAttention(shape, b.linear(p + "." + q, d, inner, bias),
                          b.fused({b.part(p + "." + k, d, inner, bias), b.part(p + "." + v, d, inner, bias)}),
                          b.linear(p + "." + o, inner, d, bias));
}

}  // namespace

std::unique_ptr<Seq2SeqLM> Seq2SeqLM::load_t5(const ModelConfig& config, const GenerationConfig& generation,
                                              std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                              std::optional<ops::MatmulKind> packing) {
    const T5Config& c = config.t5();
    std::unique_ptr<Seq2SeqLM> m(new Seq2SeqLM());
    m->init_common(config, generation, options, store->directory(), c.vocab_size);
    m->t5_ = true;
    m->d_model_ = c.d_model;
    m->heads_ = c.num_heads;
    m->head_dim_ = c.d_kv;
    m->buckets_ = c.relative_attention_num_buckets;
    m->max_distance_ = c.relative_attention_max_distance;
    m->cache_shape_ = CacheShape{c.num_decoder_layers, c.num_heads, c.d_kv};
    ModuleBuilder b(store, m->sites_, packing);
    const AttentionShape shape{c.num_heads, c.d_kv, 1.0, 1.0};
    const double eps = c.layer_norm_epsilon;
    m->encoder_relative_bias_ = b.tensor("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                                         {m->buckets_, c.num_heads});
    m->decoder_relative_bias_ = b.tensor("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                                         {m->buckets_, c.num_heads});
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string p = layer_path("encoder.block", i);
        TransformerBlock blk;
        blk.placement = NormPlacement::Pre;
        blk.half_guard = HalfOverflowGuard::ClampEachSublayer;
        blk.self_norm = b.rms_norm(p + ".layer.0.layer_norm", c.d_model, eps);
        blk.self_attn = fused_self_attention(b, p + ".layer.0.SelfAttention", shape, c.d_model, "q", "k", "v", "o", false);
        blk.ffn_norm = b.rms_norm(p + ".layer.1.layer_norm", c.d_model, eps);
        blk.ffn = t5_ffn(b, p + ".layer.1.DenseReluDense", c);
        m->encoder_.push_back(std::move(blk));
    }
    m->encoder_final_norm_ = b.rms_norm("encoder.final_layer_norm", c.d_model, eps);
    for (int64_t i = 0; i < c.num_decoder_layers; ++i) {
        const std::string p = layer_path("decoder.block", i);
        TransformerBlock blk;
        blk.placement = NormPlacement::Pre;
        blk.half_guard = HalfOverflowGuard::ClampEachSublayer;
        blk.self_norm = b.rms_norm(p + ".layer.0.layer_norm", c.d_model, eps);
        blk.self_attn = fused_self_attention(b, p + ".layer.0.SelfAttention", shape, c.d_model, "q", "k", "v", "o", false);
        blk.has_cross = true;
        blk.cross_norm = b.rms_norm(p + ".layer.1.layer_norm", c.d_model, eps);
        blk.cross_attn = cross_attention(b, p + ".layer.1.EncDecAttention", shape, c.d_model, "q", "k", "v", "o", false);
        blk.ffn_norm = b.rms_norm(p + ".layer.2.layer_norm", c.d_model, eps);
        blk.ffn = t5_ffn(b, p + ".layer.2.DenseReluDense", c);
        m->decoder_.push_back(std::move(blk));
    }
    m->decoder_final_norm_ = b.rms_norm("decoder.final_layer_norm", c.d_model, eps);
    m->lm_head_ = b.linear("lm_head", c.d_model, c.vocab_size, false);
    // After the head: tied weights are held once.
    m->encoder_embed_ = m->decoder_embed_ = b.embedding("shared.weight", c.vocab_size, c.d_model);
    m->source_vocab_ = c.vocab_size;
    const bool scale = c.scale_decoder_outputs.value_or(c.tie_word_embeddings);
    m->output_scale_ = scale ? std::pow(static_cast<double>(c.d_model), -0.5) : 1.0;
    return m;
}

namespace {

FeedForward bart_ffn(ModuleBuilder& b, const std::string& p, int64_t d, int64_t inner, Activation act) {
    return FeedForward(b.linear(p + ".fc1", d, inner, true), b.linear(p + ".fc2", inner, d, true), act);
}

// One encoder or decoder layer of the BART family: post-LN as BART and Marian, pre-LN as mBART,
// Pegasus and M2M100. HF's encoder layers alone clamp float16 overflow.
TransformerBlock bart_layer(ModuleBuilder& b, const std::string& p, const BartConfig& c, AttentionShape shape,
                            int64_t ffn_dim, Activation act, bool decoder) {
    TransformerBlock blk;
    blk.placement = c.pre_layer_norm ? NormPlacement::Pre : NormPlacement::Post;
    blk.half_guard = decoder ? HalfOverflowGuard::None : HalfOverflowGuard::ClampOnInfOrNan;
    blk.self_attn = fused_self_attention(b, p + ".self_attn", shape, c.d_model, "q_proj", "k_proj", "v_proj", "out_proj", true);
    blk.self_norm = b.layer_norm(p + ".self_attn_layer_norm", c.d_model, 1e-5);
    if (decoder) {
        blk.has_cross = true;
        blk.cross_attn = cross_attention(b, p + ".encoder_attn", shape, c.d_model, "q_proj", "k_proj", "v_proj", "out_proj", true);
        blk.cross_norm = b.layer_norm(p + ".encoder_attn_layer_norm", c.d_model, 1e-5);
    }
    blk.ffn = bart_ffn(b, p, c.d_model, ffn_dim, act);
    blk.ffn_norm = b.layer_norm(p + ".final_layer_norm", c.d_model, 1e-5);
    return blk;
}

PositionTable bart_positions(ModuleBuilder& b, const BartConfig& c, const char* stack, at::TensorOptions options) {
    const std::string name = std::string("model.") + stack + ".embed_positions.weight";
    switch (c.position_embedding) {
        case PositionEmbedding::Learned:
            // fairseq's padding_idx + 1: BART's learned positions start at row 2.
            return PositionTable(c.position_embedding, b.tensor(name, {c.max_position_embeddings + 2, c.d_model}), 2);
        case PositionEmbedding::Sinusoidal: {
            // Pegasus's files hold the table (Marian's leave it out); HF then uses the file's.
            auto stored = b.optional_tensor(name, {c.max_position_embeddings, c.d_model});
            at::Tensor table = stored ? *stored : marian_sinusoid_table(c.max_position_embeddings, c.d_model).to(options);
            return PositionTable(c.position_embedding, table, 0);
        }
        case PositionEmbedding::SinusoidalFromPad:
            return PositionTable::from_pad(c.max_position_embeddings, c.d_model, c.pad_token_id, options);
    }
    return {};
}

}  // namespace

void Seq2SeqLM::load_bart_embeddings(const BartConfig& c, ModuleBuilder& b) {
    embed_scale_ = c.scale_embedding ? std::sqrt(static_cast<double>(c.d_model)) : 1.0;
    encoder_positions_ = bart_positions(b, c, "encoder", options_);
    decoder_positions_ = bart_positions(b, c, "decoder", options_);
    if (c.layernorm_embedding) {
        encoder_embed_norm_ = b.layer_norm("model.encoder.layernorm_embedding", c.d_model, 1e-5);
        decoder_embed_norm_ = b.layer_norm("model.decoder.layernorm_embedding", c.d_model, 1e-5);
    }
    // After the head: tied weights are held once.
    if (c.share_encoder_decoder_embeddings) {
        encoder_embed_ = decoder_embed_ = b.embedding("model.shared.weight", c.vocab_size, c.d_model);
    } else {  // Marian's separate vocabularies: two tables (a tied head is the decoder's)
        encoder_embed_ = b.embedding("model.encoder.embed_tokens.weight", c.vocab_size, c.d_model);
        decoder_embed_ = b.embedding("model.decoder.embed_tokens.weight", c.vocab_size, c.d_model);
    }
}

std::unique_ptr<Seq2SeqLM> Seq2SeqLM::load_bart(const ModelConfig& config, const GenerationConfig& generation,
                                                std::shared_ptr<weights::WeightStore> store, at::TensorOptions options,
                                              std::optional<ops::MatmulKind> packing) {
    const BartConfig& c = config.bart();
    const int64_t target_vocab = c.target_vocab_size();
    std::unique_ptr<Seq2SeqLM> m(new Seq2SeqLM());
    m->init_common(config, generation, options, store->directory(), target_vocab);
    m->t5_ = false;
    m->d_model_ = c.d_model;
    m->source_vocab_ = c.vocab_size;
    const std::string where = store->directory() + "/config.json";
    // HF allows different head counts in the encoder and the decoder (whose cross-attention uses
    // the decoder's); each stack gets its own shape, and the cache the decoder's.
    for (int64_t heads : {c.encoder_attention_heads, c.decoder_attention_heads})
        if (heads < 1 || c.d_model % heads != 0)
            throw Error(ErrorKind::Format, where, "d_model " + std::to_string(c.d_model) +
                                                      " is not a multiple of the attention head count " + std::to_string(heads));
    m->heads_ = c.decoder_attention_heads;
    m->head_dim_ = c.d_model / m->heads_;
    m->cache_shape_ = CacheShape{c.decoder_layers, m->heads_, m->head_dim_};
    const int64_t encoder_head_dim = c.d_model / c.encoder_attention_heads;
    const AttentionShape encoder_shape{c.encoder_attention_heads, encoder_head_dim, 1.0,
                                       std::pow(static_cast<double>(encoder_head_dim), -0.5)};
    const AttentionShape shape{m->heads_, m->head_dim_, 1.0, std::pow(static_cast<double>(m->head_dim_), -0.5)};
    const Activation act = parse_activation(c.activation_function, where);
    ModuleBuilder b(store, m->sites_, packing);
    for (int64_t i = 0; i < c.encoder_layers; ++i)
        m->encoder_.push_back(bart_layer(b, layer_path("model.encoder.layers", i), c, encoder_shape, c.encoder_ffn_dim, act, false));
    for (int64_t i = 0; i < c.decoder_layers; ++i)
        m->decoder_.push_back(bart_layer(b, layer_path("model.decoder.layers", i), c, shape, c.decoder_ffn_dim, act, true));
    if (c.final_layer_norms) {
        m->encoder_final_norm_ = b.layer_norm("model.encoder.layer_norm", c.d_model, 1e-5);
        m->decoder_final_norm_ = b.layer_norm("model.decoder.layer_norm", c.d_model, 1e-5);
    }
    m->lm_head_ = b.linear("lm_head", c.d_model, target_vocab, false);
    m->load_bart_embeddings(c, b);
    // Sized by the target vocabulary even under a head tied to a larger table, where HF then fails too.
    const int64_t bias_rows = c.share_encoder_decoder_embeddings ? c.vocab_size : c.decoder_vocab_size;
    if (c.final_logits_bias)
        if (auto bias = b.optional_tensor("final_logits_bias", {1, bias_rows})) m->final_logits_bias_ = bias->view({-1});
    return m;
}

at::Tensor Seq2SeqLM::embed(const at::Tensor& ids, const std::vector<int64_t>& past, bool decoder) const {
    at::Tensor h = (decoder ? decoder_embed_ : encoder_embed_).forward(ids);
    if (t5_) return h;
    if (embed_scale_ != 1.0) h = h * embed_scale_;
    h = h + (decoder ? decoder_positions_ : encoder_positions_).forward(ids, past);
    const Norm& norm = decoder ? decoder_embed_norm_ : encoder_embed_norm_;
    return norm.defined() ? norm.forward(h) : h;
}

void Seq2SeqLM::check_length(int64_t length, bool decoder) const {
    if (t5_) return;
    const auto limit = (decoder ? decoder_positions_ : encoder_positions_).max_length();
    if (limit && length > *limit)
        throw Error(ErrorKind::InvalidArgument, directory_,
                    std::string(decoder ? "decoder length " : "input of ") + std::to_string(length) +
                        (decoder ? "" : " tokens") + " exceeds max_position_embeddings " + std::to_string(*limit));
}

// Bucketed relative positions [..., T, L] -> bias [..., H, T, L] (batch dims kept in front).
at::Tensor Seq2SeqLM::t5_bias(const at::Tensor& relative, bool decoder) const {
    at::Tensor buckets = t5_relative_buckets(relative, /*bidirectional=*/!decoder, buckets_, max_distance_);
    at::Tensor values = at::embedding(decoder ? decoder_relative_bias_ : encoder_relative_bias_, buckets);
    return values.permute({0, 3, 1, 2});  // [B, T, L, H] -> [B, H, T, L]
}

Model::EncoderWork Seq2SeqLM::begin_encoder(const TokenBatch& prompts) const {
    const int64_t B = prompts.rows(), S = prompts.ids.size(1);
    for (int64_t n : prompts.lengths)
        if (n < 1 || n > S) throw Error(ErrorKind::InvalidArgument, "every encoder input needs 1.." + std::to_string(S) + " tokens");
    check_length(S, /*decoder=*/false);
    EncoderWork work;
    work.prompts = prompts;
    const at::Tensor ids = prompts.ids.to(options_.device());
    const auto long_opts = at::TensorOptions().dtype(at::kLong).device(options_.device());
    work.hidden = embed(ids, std::vector<int64_t>(static_cast<size_t>(B), 0), /*decoder=*/false);
    at::Tensor bias = padding_mask(prompts.lengths, S, options_);
    if (t5_) {
        at::Tensor slots = at::arange(S, long_opts);
        at::Tensor relative = (slots.unsqueeze(0) - slots.unsqueeze(1)).unsqueeze(0);  // [1, S(q), S(k)]
        at::Tensor position = t5_bias(relative, /*decoder=*/false);                      // [1, H, S, S]
        bias = bias.defined() ? position + bias : position;
    }
    work.bias = bias;
    return work;
}

void Seq2SeqLM::run_encoder(EncoderWork& work, int64_t units, const LoraHook* lora) const {
    const int64_t layers = static_cast<int64_t>(encoder_.size());
    for (int64_t i = 0; i < units && work.done < layers; ++i, ++work.done)
        work.hidden = encoder_[static_cast<size_t>(work.done)].forward(work.hidden, work.bias, nullptr, 0, lora);
}

DecodeState Seq2SeqLM::finish_encoder(EncoderWork& work, const LoraHook* lora, std::shared_ptr<KvPool> pool) const {
    run_encoder(work, encoder_units(), lora);
    at::Tensor h = encoder_final_norm_.defined() ? encoder_final_norm_.forward(work.hidden) : work.hidden;
    std::vector<at::Tensor> keys, values;
    for (const auto& blk : decoder_) {
        auto kv = blk.cross_attn.project_memory(h, lora);
        keys.push_back(std::move(kv.first));
        values.push_back(std::move(kv.second));
    }
    const int64_t B = work.prompts.rows(), S = work.prompts.ids.size(1);
    if (!pool) pool = make_pool(B * ((S + KvPool::kBlockSize - 1) / KvPool::kBlockSize + 2), /*growable=*/true);
    DecodeState state(std::move(pool));
    for (int64_t b = 0; b < B; ++b) state.add_row();
    state.write_cross(0, work.prompts.lengths, keys, values);
    work.done = encoder_units();
    return state;
}

DecodeState Seq2SeqLM::start(const TokenBatch& prompts, const LoraHook* lora, std::shared_ptr<KvPool> pool) const {
    EncoderWork work = begin_encoder(prompts);
    return finish_encoder(work, lora, std::move(pool));
}

at::Tensor Seq2SeqLM::forward(DecodeState& state, const TokenBatch& tokens, LogitsAt which, const LoraHook* lora) const {
    const int64_t B = tokens.rows(), T = tokens.ids.size(1);
    TORCH_CHECK(B == state.rows(), "Seq2SeqLM::forward: ", B, " token rows for a state of ", state.rows());
    const std::vector<int64_t> past = state.lengths();
    const int64_t L = state.max_length() + T;
    const bool equal = state.uniform();
    check_length(L, /*decoder=*/true);
    const at::Tensor ids = tokens.ids.to(options_.device());
    at::Tensor h = embed(ids, past, /*decoder=*/true);
    at::Tensor bias = causal_mask(past, T, L, options_);
    if (t5_) {
        // Rows of equal length share one bias; otherwise each row has its own query positions.
        const auto long_opts = at::TensorOptions().dtype(at::kLong).device(options_.device());
        at::Tensor positions = query_positions(past, T, options_.device());             // [B, T]
        at::Tensor q = equal ? positions.narrow(0, 0, 1) : positions;                  // [B', T]
        at::Tensor relative = at::arange(L, long_opts).view({1, 1, L}) - q.unsqueeze(2);  // [B', T, L]
        at::Tensor position = t5_bias(relative, /*decoder=*/true);
        bias = bias.defined() ? position + bias : position;
    }
    const PagedStep step = state.begin_forward(tokens.lengths, T);
    for (size_t l = 0; l < decoder_.size(); ++l) h = decoder_[l].forward(h, bias, &step, static_cast<int64_t>(l), lora);
    state.advance(tokens.lengths);
    if (which == LogitsAt::None) return at::Tensor();

    if (which == LogitsAt::LastValid) {
        std::vector<int64_t> last;
        for (int64_t n : tokens.lengths) last.push_back(n - 1);
        h = T == 1 ? h.select(1, 0) : gather_positions(h, last);
    }
    if (decoder_final_norm_.defined()) h = decoder_final_norm_.forward(h);
    if (output_scale_ != 1.0) h = h * output_scale_;
    at::Tensor logits = lm_head_.forward(h.dim() == 2 ? h.unsqueeze(1) : h, lora);
    if (final_logits_bias_.defined()) logits.add_(final_logits_bias_);
    if (h.dim() == 2) logits = logits.squeeze(1);
    return logits.scalar_type() == at::kFloat ? logits : logits.to(at::kFloat);
}

}  // namespace lorascope::models
