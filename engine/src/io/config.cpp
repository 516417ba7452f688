// config.json / generation_config.json into typed configs, with transformers 4.46's defaults.
//
// Precedence follows PretrainedConfig: a class's own __init__ arguments are assigned first, then
// leftover keys go through setattr(), which maps attribute_map aliases onto the real field. So an
// alias written in the file (BLOOM "num_hidden_layers", T5 "hidden_size") wins over the field it
// names, and T5's num_decoder_layers is derived from "num_layers" before any alias applies.
#include "util/paths.h"
#include "lorascope/config.h"

#include <sys/stat.h>

#include "lorascope/error.h"
#include "util/json_read.h"

namespace lorascope {
namespace {

using json::Json;
using json::ObjectReader;

// The alias wins when present (it is applied after the class's own argument).
int64_t int_with_alias(const ObjectReader& r, const std::string& key, const std::string& alias,
                       int64_t fallback) {
    return r.get_int(alias).value_or(r.get_int(key, fallback));
}

T5Config parse_t5(const ObjectReader& r) {
    T5Config c;
    c.vocab_size = r.get_int("vocab_size", c.vocab_size);
    c.d_model = int_with_alias(r, "d_model", "hidden_size", c.d_model);
    c.d_kv = int_with_alias(r, "d_kv", "head_dim", c.d_kv);
    c.d_ff = r.get_int("d_ff", c.d_ff);
    const int64_t num_layers_arg = r.get_int("num_layers", c.num_layers);
    c.num_decoder_layers = r.get_int("num_decoder_layers", num_layers_arg);
    c.num_layers = int_with_alias(r, "num_layers", "num_hidden_layers", c.num_layers);
    c.num_heads = int_with_alias(r, "num_heads", "num_attention_heads", c.num_heads);
    c.relative_attention_num_buckets = r.get_int("relative_attention_num_buckets", c.relative_attention_num_buckets);
    c.relative_attention_max_distance = r.get_int("relative_attention_max_distance", c.relative_attention_max_distance);
    c.layer_norm_epsilon = r.get_double("layer_norm_epsilon", c.layer_norm_epsilon);
    c.feed_forward_proj = r.get_string("feed_forward_proj", c.feed_forward_proj);

    // "gated-gelu" -> gated, act "gelu_new" (backward compatibility in T5Config); "relu" -> plain relu.
    const std::string& ffp = c.feed_forward_proj;
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        size_t dash = ffp.find('-', start);
        parts.push_back(ffp.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
        if (dash == std::string::npos) break;
        start = dash + 1;
    }
    if ((parts.size() > 1 && parts[0] != "gated") || parts.size() > 2)
        r.fail_field("feed_forward_proj", "'" + ffp + "' is not of the form 'gated-{ACT}' or '{ACT}'");
    c.dense_act_fn = parts.back();
    c.is_gated_act = parts[0] == "gated";
    if (ffp == "gated-gelu") c.dense_act_fn = "gelu_new";
    // Configs written by to_dict() carry the derived fields; setattr applies them afterwards.
    c.dense_act_fn = r.get_string("dense_act_fn", c.dense_act_fn);
    c.is_gated_act = r.get_bool("is_gated_act", c.is_gated_act);

    c.tie_word_embeddings = r.get_bool("tie_word_embeddings", c.tie_word_embeddings);
    c.scale_decoder_outputs = r.get_bool("scale_decoder_outputs");
    c.pad_token_id = r.get_int("pad_token_id", c.pad_token_id);
    c.eos_token_id = r.get_int("eos_token_id", c.eos_token_id);
    // transformers has no default here (generation would refuse); T5 checkpoints all use pad (0).
    c.decoder_start_token_id = r.get_int("decoder_start_token_id", c.pad_token_id);
    return c;
}

BartConfig parse_bart(const ObjectReader& r) {
    BartConfig c;
    c.vocab_size = r.get_int("vocab_size", c.vocab_size);
    c.max_position_embeddings = r.get_int("max_position_embeddings", c.max_position_embeddings);
    c.d_model = int_with_alias(r, "d_model", "hidden_size", c.d_model);
    c.encoder_layers = r.get_int("encoder_layers", c.encoder_layers);
    c.encoder_ffn_dim = r.get_int("encoder_ffn_dim", c.encoder_ffn_dim);
    c.encoder_attention_heads =
        int_with_alias(r, "encoder_attention_heads", "num_attention_heads", c.encoder_attention_heads);
    c.decoder_layers = r.get_int("decoder_layers", c.decoder_layers);
    c.decoder_ffn_dim = r.get_int("decoder_ffn_dim", c.decoder_ffn_dim);
    c.decoder_attention_heads = r.get_int("decoder_attention_heads", c.decoder_attention_heads);
    c.activation_function = r.get_string("activation_function", c.activation_function);
    c.scale_embedding = r.get_bool("scale_embedding", c.scale_embedding);
    c.normalize_before = r.get_bool("normalize_before", c.normalize_before);
    c.add_final_layer_norm = r.get_bool("add_final_layer_norm", c.add_final_layer_norm);
    c.tie_word_embeddings = r.get_bool("tie_word_embeddings", c.tie_word_embeddings);
    c.pad_token_id = r.get_int("pad_token_id", c.pad_token_id);
    c.bos_token_id = r.get_int("bos_token_id", c.bos_token_id);
    c.eos_token_id = r.get_int("eos_token_id", c.eos_token_id);
    c.decoder_start_token_id = r.get_int("decoder_start_token_id", c.decoder_start_token_id);
    c.forced_bos_token_id = r.get_int("forced_bos_token_id");
    // An explicit null disables the forced eos; only an absent key takes the class default.
    if (r.contains_key("forced_eos_token_id")) c.forced_eos_token_id = r.get_int("forced_eos_token_id");
    if (!c.forced_bos_token_id && r.get_bool("force_bos_token_to_be_generated", false))
        c.forced_bos_token_id = c.bos_token_id;  // BART-CNN backward compatibility
    return c;
}

BloomConfig parse_bloom(const ObjectReader& r) {
    BloomConfig c;
    c.vocab_size = r.get_int("vocab_size", c.vocab_size);
    c.hidden_size = int_with_alias(r, "hidden_size", "n_embed", c.hidden_size);
    c.n_layer = int_with_alias(r, "n_layer", "num_hidden_layers", c.n_layer);
    c.n_head = int_with_alias(r, "n_head", "num_attention_heads", c.n_head);
    c.layer_norm_epsilon = r.get_double("layer_norm_epsilon", c.layer_norm_epsilon);
    c.apply_residual_connection_post_layernorm =
        r.get_bool("apply_residual_connection_post_layernorm", c.apply_residual_connection_post_layernorm);
    c.tie_word_embeddings = r.get_bool("tie_word_embeddings", c.tie_word_embeddings);
    c.bos_token_id = r.get_int("bos_token_id", c.bos_token_id);
    c.eos_token_id = r.get_int("eos_token_id", c.eos_token_id);
    c.pad_token_id = r.get_int("pad_token_id");
    return c;
}

void require_positive(const ObjectReader& r, const char* field, int64_t value) {
    if (value <= 0) r.fail_field(field, "must be positive, got " + std::to_string(value));
}

void validate(const ModelConfig& m, const ObjectReader& r) {
    switch (m.family) {
        case Family::T5: {
            const auto& c = m.t5();
            require_positive(r, "vocab_size", c.vocab_size);
            require_positive(r, "d_model", c.d_model);
            require_positive(r, "d_kv", c.d_kv);
            require_positive(r, "d_ff", c.d_ff);
            require_positive(r, "num_heads", c.num_heads);
            require_positive(r, "relative_attention_num_buckets", c.relative_attention_num_buckets);
            if (c.num_layers < 0) r.fail_field("num_layers", "must not be negative");
            if (c.num_decoder_layers < 0) r.fail_field("num_decoder_layers", "must not be negative");
            break;
        }
        case Family::Bart: {
            const auto& c = m.bart();
            require_positive(r, "vocab_size", c.vocab_size);
            require_positive(r, "d_model", c.d_model);
            require_positive(r, "max_position_embeddings", c.max_position_embeddings);
            require_positive(r, "encoder_attention_heads", c.encoder_attention_heads);
            require_positive(r, "decoder_attention_heads", c.decoder_attention_heads);
            require_positive(r, "encoder_ffn_dim", c.encoder_ffn_dim);
            require_positive(r, "decoder_ffn_dim", c.decoder_ffn_dim);
            if (c.d_model % c.encoder_attention_heads || c.d_model % c.decoder_attention_heads)
                r.fail_field("d_model", "must be divisible by the number of attention heads");
            break;
        }
        case Family::Bloom: {
            const auto& c = m.bloom();
            require_positive(r, "vocab_size", c.vocab_size);
            require_positive(r, "hidden_size", c.hidden_size);
            require_positive(r, "n_head", c.n_head);
            if (c.n_layer < 0) r.fail_field("n_layer", "must not be negative");
            if (c.hidden_size % c.n_head)
                r.fail_field("hidden_size", "must be divisible by n_head");
            break;
        }
    }
}

GenerationConfig parse_generation(const ObjectReader& r) {
    GenerationConfig g;
    g.max_length = r.get_int("max_length", 20);
    g.max_new_tokens = r.get_int("max_new_tokens");
    g.min_length = r.get_int("min_length", g.min_length);
    g.min_new_tokens = r.get_int("min_new_tokens");
    g.do_sample = r.get_bool("do_sample", g.do_sample);
    g.num_beams = r.get_int("num_beams", g.num_beams);
    g.num_return_sequences = r.get_int("num_return_sequences", g.num_return_sequences);
    g.temperature = r.get_double("temperature", g.temperature);
    g.top_k = r.get_int("top_k", g.top_k);
    g.top_p = r.get_double("top_p", g.top_p);
    g.typical_p = r.get_double("typical_p", g.typical_p);
    g.min_p = r.get_double("min_p");
    g.repetition_penalty = r.get_double("repetition_penalty", g.repetition_penalty);
    g.length_penalty = r.get_double("length_penalty", g.length_penalty);
    g.no_repeat_ngram_size = r.get_int("no_repeat_ngram_size", g.no_repeat_ngram_size);
    // early_stopping is a bool or the string "never" (beam search only).
    if (const Json* es = r.find("early_stopping")) {
        if (es->is_boolean()) g.early_stopping = es->get<bool>();
        else if (!(es->is_string() && es->get<std::string>() == "never"))
            r.fail_field("early_stopping", "must be true, false or \"never\"");
    }
    g.bos_token_id = r.get_int("bos_token_id");
    g.eos_token_ids = r.get_int_or_list("eos_token_id");
    g.pad_token_id = r.get_int("pad_token_id");
    g.decoder_start_token_id = r.get_int("decoder_start_token_id");
    g.forced_bos_token_id = r.get_int("forced_bos_token_id");
    g.forced_eos_token_id = r.get_int("forced_eos_token_id");
    return g;
}

}  // namespace

const char* to_string(Family family) {
    switch (family) {
        case Family::T5: return "t5";
        case Family::Bart: return "bart";
        case Family::Bloom: return "bloom";
    }
    return "unknown";
}

int64_t ModelConfig::vocab_size() const {
    switch (family) {
        case Family::T5: return t5().vocab_size;
        case Family::Bart: return bart().vocab_size;
        case Family::Bloom: return bloom().vocab_size;
    }
    return 0;
}

std::optional<int64_t> ModelConfig::context_tokens() const {
    // T5's relative position buckets and BLOOM's ALiBi have no table to run out of.
    if (family == Family::Bart) return bart().max_position_embeddings;
    return std::nullopt;
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& path) {
    const Json root = json::parse(json_text, path);
    ObjectReader r(root, path);
    ModelConfig m;
    auto model_type = r.get_string("model_type");
    if (!model_type)
        throw Error(ErrorKind::Format, path, "missing 'model_type' (expected \"t5\", \"bart\" or \"bloom\")");
    m.model_type = *model_type;
    if (m.model_type == "t5") {
        m.family = Family::T5;
        m.arch = parse_t5(r);
    } else if (m.model_type == "bart") {
        m.family = Family::Bart;
        m.arch = parse_bart(r);
    } else if (m.model_type == "bloom") {
        m.family = Family::Bloom;
        m.arch = parse_bloom(r);
    } else {
        throw Error(ErrorKind::Unsupported, path,
                    "model_type '" + m.model_type + "' is not supported (supported: t5, bart, bloom)");
    }
    m.name_or_path = r.get_string("_name_or_path", "");
    m.torch_dtype = r.get_string("torch_dtype", "");
    m.architectures = r.get_string_list("architectures");
    validate(m, r);
    return m;
}

ModelConfig load_model_config(const std::string& dir) {
    const std::string path = paths::join(dir, "config.json");
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw Error(ErrorKind::NotFound, dir, "not a directory");
    if (!paths::is_regular_file(path))
        throw Error(ErrorKind::NotFound, path, "missing (not a Hugging Face checkpoint directory?)");
    return parse_model_config(json::read_text_file(path), path);
}

namespace {

// Token ids the engine emits or feeds (forced tokens, the decoder start) must exist: caught here, at
// load, rather than by the embedding lookup of every step.
GenerationConfig checked(GenerationConfig g, const ModelConfig& model, const std::string& path) {
    const int64_t vocab = model.vocab_size();
    auto check = [&](const char* key, const std::optional<int64_t>& id) {
        if (id && (*id < 0 || *id >= vocab))
            throw Error(ErrorKind::Format, path,
                        std::string(key) + " " + std::to_string(*id) + " is outside the vocabulary [0, " +
                            std::to_string(vocab) + ")");
    };
    check("forced_bos_token_id", g.forced_bos_token_id);
    check("forced_eos_token_id", g.forced_eos_token_id);
    check("decoder_start_token_id", g.decoder_start_token_id);
    return g;
}

}  // namespace

GenerationConfig load_generation_config(const std::string& dir, const ModelConfig& model) {
    const std::string path = paths::join(dir, "generation_config.json");
    if (paths::is_regular_file(path)) {
        const Json root = json::parse_file(path);
        return checked(parse_generation(ObjectReader(root, path)), model, path);
    }
    // GenerationConfig.from_model_config: the model config's generation keys (non-null values),
    // with the model class's own token-id defaults filled in.
    const std::string config_path = paths::join(dir, "config.json");
    Json merged = json::parse_file(config_path);
    if (!merged.is_object()) throw Error(ErrorKind::Format, config_path, "top level must be a JSON object");
    auto set = [&merged](const char* key, std::optional<int64_t> value) {
        if (value) merged[key] = *value;
        else merged.erase(key);
    };
    switch (model.family) {
        case Family::T5: {
            const auto& c = model.t5();
            set("pad_token_id", c.pad_token_id);
            set("eos_token_id", c.eos_token_id);
            set("decoder_start_token_id", ObjectReader(merged, config_path).get_int("decoder_start_token_id"));
            break;
        }
        case Family::Bart: {
            const auto& c = model.bart();
            set("pad_token_id", c.pad_token_id);
            set("bos_token_id", c.bos_token_id);
            set("eos_token_id", c.eos_token_id);
            set("decoder_start_token_id", c.decoder_start_token_id);
            set("forced_bos_token_id", c.forced_bos_token_id);
            set("forced_eos_token_id", c.forced_eos_token_id);
            break;
        }
        case Family::Bloom: {
            const auto& c = model.bloom();
            set("bos_token_id", c.bos_token_id);
            set("eos_token_id", c.eos_token_id);
            set("pad_token_id", c.pad_token_id);
            break;
        }
    }
    return checked(parse_generation(ObjectReader(merged, config_path)), model, config_path);
}

std::optional<int64_t> decoder_start_token_id(const ModelConfig& model, const GenerationConfig& generation) {
    if (!model.is_encoder_decoder()) return std::nullopt;
    if (generation.decoder_start_token_id) return generation.decoder_start_token_id;
    switch (model.family) {
        case Family::T5: return model.t5().decoder_start_token_id;
        case Family::Bart: return model.bart().decoder_start_token_id;
        case Family::Bloom: break;
    }
    return std::nullopt;
}

}  // namespace lorascope
