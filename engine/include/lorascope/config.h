// Typed model and generation configurations read from a Hugging Face checkpoint directory.
// Absent keys take Hugging Face's defaults for the class named by `model_type`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lorascope {

enum class Family { T5, Bart, Bloom, Llama };
const char* to_string(Family family);

// How a BART-shaped model adds positions to its token embeddings.
enum class PositionEmbedding {
    Learned,            // BART, mBART: a trained table, read at position + 2
    Sinusoidal,         // Marian, Pegasus: sin and cos halves from position 0 (a file may hold the table)
    SinusoidalFromPad,  // M2M100 / NLLB: fairseq's table, positions counted from pad_token_id + 1
};
const char* to_string(PositionEmbedding kind);

// T5 and mT5 (model_type "mt5": the same model with other defaults).
struct T5Config {
    int64_t vocab_size = 32128;
    int64_t d_model = 512;
    int64_t d_kv = 64;                  // per-head width; num_heads * d_kv may differ from d_model
    int64_t d_ff = 2048;
    int64_t num_layers = 6;
    int64_t num_decoder_layers = 6;     // defaults to num_layers
    int64_t num_heads = 8;
    int64_t relative_attention_num_buckets = 32;
    int64_t relative_attention_max_distance = 128;
    double layer_norm_epsilon = 1e-6;
    std::string feed_forward_proj = "relu";  // "relu", "gated-gelu", "gated-relu", ...
    std::string dense_act_fn = "relu";       // derived: "gated-gelu" -> "gelu_new"
    bool is_gated_act = false;               // derived from feed_forward_proj
    bool tie_word_embeddings = true;
    // Set by newer transformers releases; when present it overrides the tie-based rule for the
    // d_model ** -0.5 output scaling (docs/architecture.md, platform pitfalls).
    std::optional<bool> scale_decoder_outputs;
    int64_t pad_token_id = 0;
    int64_t eos_token_id = 1;
    int64_t decoder_start_token_id = 0;
};

// BART and the model types built on its skeleton: marian, mbart, m2m_100 (NLLB) and pegasus.
// Defaults are those of the class `model_type` names; the switches below the token ids are fixed
// by that class (Hugging Face has no config key for them).
struct BartConfig {
    int64_t vocab_size = 50265;
    int64_t max_position_embeddings = 1024;
    int64_t d_model = 1024;
    int64_t encoder_layers = 12;
    int64_t encoder_ffn_dim = 4096;
    int64_t encoder_attention_heads = 16;
    int64_t decoder_layers = 12;
    int64_t decoder_ffn_dim = 4096;
    int64_t decoder_attention_heads = 16;
    std::string activation_function = "gelu";
    bool scale_embedding = false;
    // Fairseq-era keys that Hugging Face's BART class ignores; kept so `info` can report them.
    bool normalize_before = false;
    bool add_final_layer_norm = false;
    bool tie_word_embeddings = true;
    int64_t pad_token_id = 1;
    std::optional<int64_t> bos_token_id = 0;             // Marian, Pegasus: none
    int64_t eos_token_id = 2;
    std::optional<int64_t> decoder_start_token_id = 2;   // mBART: none (generation starts from bos)
    std::optional<int64_t> forced_bos_token_id;
    std::optional<int64_t> forced_eos_token_id = 2;
    // Marian: separate source and target vocabularies when share_encoder_decoder_embeddings is
    // false. As MarianMTModel builds them, the decoder's embeddings then still have vocab_size rows
    // (a copy of the encoder's table); an untied head and final_logits_bias have decoder_vocab_size.
    int64_t decoder_vocab_size = 50265;
    bool share_encoder_decoder_embeddings = true;

    PositionEmbedding position_embedding = PositionEmbedding::Learned;
    bool pre_layer_norm = false;       // mBART, Pegasus, M2M100: x + f(norm(x)) in every layer ...
    bool final_layer_norms = false;    // ... and a LayerNorm after each stack (encoder/decoder.layer_norm)
    bool layernorm_embedding = true;   // BART, mBART: a LayerNorm right after the embeddings
    bool final_logits_bias = true;     // all but M2M100: a [1, V] buffer added to the logits

    int64_t target_vocab_size() const {
        return share_encoder_decoder_embeddings || tie_word_embeddings ? vocab_size : decoder_vocab_size;
    }
};

struct BloomConfig {
    int64_t vocab_size = 250880;
    int64_t hidden_size = 64;    // alias n_embed
    int64_t n_layer = 2;         // alias num_hidden_layers
    int64_t n_head = 8;          // alias num_attention_heads
    double layer_norm_epsilon = 1e-5;
    bool apply_residual_connection_post_layernorm = false;
    bool tie_word_embeddings = true;
    int64_t bos_token_id = 1;
    int64_t eos_token_id = 2;
    std::optional<int64_t> pad_token_id;
};

// rope_scaling of the Llama family, as transformers 4.46's ROPE_INIT_FUNCTIONS read it ("type" is the
// older spelling of "rope_type"). Fields a type does not use keep their defaults.
struct RopeScaling {
    std::string rope_type = "default";         // default, linear, dynamic, yarn, longrope, llama3
    double factor = 1.0;
    std::optional<double> attention_factor;    // yarn, longrope
    std::optional<double> beta_fast;           // yarn (default 32)
    std::optional<double> beta_slow;           // yarn (default 1)
    double low_freq_factor = 1.0;              // llama3
    double high_freq_factor = 4.0;             // llama3
    std::optional<int64_t> original_max_position_embeddings;  // llama3 (required)
    std::vector<double> short_factor;          // longrope
    std::vector<double> long_factor;           // longrope
};

// Llama, Mistral and Qwen2: one decoder-only architecture (RMSNorm, SwiGLU, rotary positions,
// grouped-query attention). `model_type` picks the class whose defaults and options apply:
// Mistral has no rope_scaling or biases and a sliding window by default; Qwen2 has q/k/v biases
// and a window only with use_sliding_window.
struct LlamaConfig {
    int64_t vocab_size = 32000;
    int64_t hidden_size = 4096;
    int64_t intermediate_size = 11008;
    int64_t num_hidden_layers = 32;
    int64_t num_attention_heads = 32;
    int64_t num_key_value_heads = 32;           // defaults to num_attention_heads (Mistral: 8)
    int64_t head_dim = 128;                     // derived from hidden_size unless given (not Qwen2)
    std::string hidden_act = "silu";
    int64_t max_position_embeddings = 2048;
    double rms_norm_eps = 1e-6;
    bool tie_word_embeddings = false;
    double rope_theta = 10000.0;
    std::optional<RopeScaling> rope_scaling;    // Llama and Qwen2 only
    // A top-level original_max_position_embeddings (Phi-3 style); longrope reads it when present.
    std::optional<int64_t> original_max_position_embeddings;
    bool attention_bias = false;                // Llama: q, k, v and o
    bool qkv_bias = false;                      // Qwen2: q, k and v (always)
    bool mlp_bias = false;                      // Llama: gate, up and down
    // Keys at most sliding_window - 1 positions behind a query stay visible (Mistral; Qwen2 with
    // use_sliding_window, on every layer as transformers 4.46's eager attention applies it).
    std::optional<int64_t> sliding_window;
    bool use_sliding_window = false;            // Qwen2
    int64_t max_window_layers = 28;             // Qwen2: reported only (see sliding_window)
    std::optional<int64_t> bos_token_id = 1;    // Qwen2: none
    std::vector<int64_t> eos_token_ids = {2};   // an int or a list (Llama 3.1); Qwen2: none
    std::optional<int64_t> pad_token_id;
};

struct ModelConfig {
    Family family = Family::T5;
    std::string model_type;          // as written in config.json
    std::string name_or_path;        // "_name_or_path" when present
    std::string torch_dtype;         // "float32", "float16", "bfloat16" or empty
    std::vector<std::string> architectures;
    std::variant<T5Config, BartConfig, BloomConfig, LlamaConfig> arch;

    bool is_encoder_decoder() const { return family == Family::T5 || family == Family::Bart; }
    const T5Config& t5() const { return std::get<T5Config>(arch); }
    const BartConfig& bart() const { return std::get<BartConfig>(arch); }
    const BloomConfig& bloom() const { return std::get<BloomConfig>(arch); }
    const LlamaConfig& llama() const { return std::get<LlamaConfig>(arch); }
    int64_t vocab_size() const;           // config.json's vocab_size: the encoder's ids
    int64_t target_vocab_size() const;    // the ids the head scores (Marian's decoder_vocab_size)
    // Positions the model has a table for (max_position_embeddings: BART's and mBART's learned
    // table, Marian's and Pegasus' sinusoidal one), for the encoder and the decoder each; none when
    // positions are relative (T5, BLOOM's ALiBi) or the table grows as needed (M2M100 / NLLB).
    std::optional<int64_t> context_tokens() const;
};

// generation_config.json, with Hugging Face's GenerationConfig defaults for absent keys.
struct GenerationConfig {
    std::optional<int64_t> max_length;        // HF default 20 when nothing else is set
    std::optional<int64_t> max_new_tokens;
    int64_t min_length = 0;
    std::optional<int64_t> min_new_tokens;
    bool do_sample = false;
    int64_t num_beams = 1;
    int64_t num_return_sequences = 1;
    double temperature = 1.0;
    int64_t top_k = 50;
    double top_p = 1.0;
    double typical_p = 1.0;
    std::optional<double> min_p;
    double repetition_penalty = 1.0;
    double length_penalty = 1.0;
    int64_t no_repeat_ngram_size = 0;
    bool early_stopping = false;
    std::optional<int64_t> bos_token_id;
    std::vector<int64_t> eos_token_ids;       // eos_token_id may be an int or a list
    std::optional<int64_t> pad_token_id;
    std::optional<int64_t> decoder_start_token_id;
    std::optional<int64_t> forced_bos_token_id;
    std::optional<int64_t> forced_eos_token_id;
    // Token sequences never to complete (NoBadWordsLogitsProcessor; Marian bans its pad token).
    std::vector<std::vector<int64_t>> bad_words_ids;
    // log_softmax once more after every processor (Marian's checkpoints set it): changes beam scores.
    bool renormalize_logits = false;
};

// Parse <dir>/config.json. Throws lorascope::Error naming the file on any problem;
// an unknown model_type is ErrorKind::Unsupported.
ModelConfig load_model_config(const std::string& dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& path_for_errors);

// Parse <dir>/generation_config.json when present; otherwise derive it from config.json's
// generation keys the way transformers does (GenerationConfig.from_model_config).
GenerationConfig load_generation_config(const std::string& dir, const ModelConfig& model);

// The token an encoder-decoder's decoder starts from, as transformers chooses it: the generation
// config's decoder_start_token_id, else the model config's, else bos (mBART). None for a
// decoder-only model.
std::optional<int64_t> decoder_start_token_id(const ModelConfig& model, const GenerationConfig& generation);

}  // namespace lorascope
