// Typed model and generation configurations read from a Hugging Face checkpoint directory.
// Absent keys take Hugging Face's defaults for the class named by `model_type`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lorascope {

enum class Family { T5, Bart, Bloom };
const char* to_string(Family family);

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
    int64_t bos_token_id = 0;
    int64_t eos_token_id = 2;
    int64_t decoder_start_token_id = 2;
    std::optional<int64_t> forced_bos_token_id;
    std::optional<int64_t> forced_eos_token_id = 2;
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

struct ModelConfig {
    Family family = Family::T5;
    std::string model_type;          // as written in config.json
    std::string name_or_path;        // "_name_or_path" when present
    std::string torch_dtype;         // "float32", "float16", "bfloat16" or empty
    std::vector<std::string> architectures;
    std::variant<T5Config, BartConfig, BloomConfig> arch;

    bool is_encoder_decoder() const { return family != Family::Bloom; }
    const T5Config& t5() const { return std::get<T5Config>(arch); }
    const BartConfig& bart() const { return std::get<BartConfig>(arch); }
    const BloomConfig& bloom() const { return std::get<BloomConfig>(arch); }
    int64_t vocab_size() const;
    // Positions the model has learned embeddings for (BART's max_position_embeddings), for the
    // encoder and the decoder each; none when its positions are relative (T5, BLOOM's ALiBi).
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
};

// Parse <dir>/config.json. Throws lorascope::Error naming the file on any problem;
// an unknown model_type is ErrorKind::Unsupported.
ModelConfig load_model_config(const std::string& dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& path_for_errors);

// Parse <dir>/generation_config.json when present; otherwise derive it from config.json's
// generation keys the way transformers does (GenerationConfig.from_model_config).
GenerationConfig load_generation_config(const std::string& dir, const ModelConfig& model);

// The token an encoder-decoder's decoder starts from, as transformers chooses it: the generation
// config's decoder_start_token_id, else the model config's. None for a decoder-only model.
std::optional<int64_t> decoder_start_token_id(const ModelConfig& model, const GenerationConfig& generation);

}  // namespace lorascope
