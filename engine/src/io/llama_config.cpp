// The three classes share LlamaConfig; where they differ (transformers 4.46):
//   llama    num_key_value_heads null/absent -> num_attention_heads; head_dim given or derived;
//            attention_bias (q, k, v, o), mlp_bias; rope_scaling; no sliding window.
//   mistral  num_key_value_heads absent -> 8; head_dim "given or derived" (0 counts as absent);
//            sliding_window absent -> 4096, null -> none; no rope_scaling (MistralRotaryEmbedding
//            ignores it), no biases.
//   qwen2    num_key_value_heads absent -> 32; q/k/v biases; rope_scaling; the window only with
//            use_sliding_window; no bos/eos by default.
#include "io/llama_config.h"

#include <cmath>

#include "lorascope/error.h"

namespace lorascope::io {

namespace {

using json::Json;
using json::ObjectReader;

// An id key where an explicit null differs from absence (PretrainedConfig keeps null as None;
// absence takes the class default).
std::optional<int64_t> id_or_default(const ObjectReader& r, const std::string& key, std::optional<int64_t> fallback) {
    if (r.contains_key(key) && !r.has(key)) return std::nullopt;
    if (auto v = r.get_int(key)) return v;
    return fallback;
}

std::vector<double> number_list(const ObjectReader& r, const std::string& key) {
    std::vector<double> out;
    const Json* v = r.find(key);
    if (!v) r.fail_field(key, "is required by this rope_type");
    if (!v->is_array()) r.fail_field(key, "must be a list of numbers, got " + v->dump());
    for (const auto& item : *v) {
        if (!item.is_number()) r.fail_field(key, "must be a list of numbers, got " + v->dump());
        out.push_back(item.get<double>());
    }
    return out;
}

double required_double(const ObjectReader& r, const std::string& key) {
    auto v = r.get_double(key);
    if (!v) r.fail_field(key, "is required by this rope_type");
    return *v;
}

// rope_config_validation's required keys; a rope type ROPE_INIT_FUNCTIONS lacks cannot load in
// transformers either.
RopeScaling parse_rope_scaling(const Json& object, const std::string& path) {
    ObjectReader r(object, path, "rope_scaling.");
    RopeScaling s;
    // LlamaConfig copies "type" over "rope_type" when both are present.
    s.rope_type = r.get_string("type").value_or(r.get_string("rope_type", "default"));
    const std::string& t = s.rope_type;
    if (t == "default") return s;
    if (t == "linear" || t == "dynamic" || t == "yarn" || t == "llama3") s.factor = required_double(r, "factor");
    if (t == "yarn") {
        s.attention_factor = r.get_double("attention_factor");
        s.beta_fast = r.get_double("beta_fast");
        s.beta_slow = r.get_double("beta_slow");
    } else if (t == "llama3") {
        s.low_freq_factor = required_double(r, "low_freq_factor");
        s.high_freq_factor = required_double(r, "high_freq_factor");
        s.original_max_position_embeddings = r.get_int("original_max_position_embeddings");
        if (!s.original_max_position_embeddings) r.fail_field("original_max_position_embeddings", "is required by llama3");
        if (s.high_freq_factor == s.low_freq_factor) r.fail_field("high_freq_factor", "must differ from low_freq_factor");
    } else if (t == "longrope") {
        s.short_factor = number_list(r, "short_factor");
        s.long_factor = number_list(r, "long_factor");
        s.factor = r.get_double("factor", 0.0);
        s.attention_factor = r.get_double("attention_factor");
    } else if (t != "linear" && t != "dynamic") {
        throw Error(ErrorKind::Unsupported, path,
                    "rope_scaling type '" + t + "' is not supported (supported: default, linear, dynamic, yarn, "
                    "longrope, llama3)");
    }
    return s;
}

void parse_common(const ObjectReader& r, LlamaConfig& c) {
    c.vocab_size = r.get_int("vocab_size", c.vocab_size);
    c.hidden_size = r.get_int("hidden_size", c.hidden_size);
    c.intermediate_size = r.get_int("intermediate_size", c.intermediate_size);
    c.num_hidden_layers = r.get_int("num_hidden_layers", c.num_hidden_layers);
    c.num_attention_heads = r.get_int("num_attention_heads", c.num_attention_heads);
    c.hidden_act = r.get_string("hidden_act", c.hidden_act);
    c.max_position_embeddings = r.get_int("max_position_embeddings", c.max_position_embeddings);
    c.rms_norm_eps = r.get_double("rms_norm_eps", c.rms_norm_eps);
    c.tie_word_embeddings = r.get_bool("tie_word_embeddings", c.tie_word_embeddings);
    c.rope_theta = r.get_double("rope_theta", c.rope_theta);
    c.original_max_position_embeddings = r.get_int("original_max_position_embeddings");
    c.bos_token_id = id_or_default(r, "bos_token_id", c.bos_token_id);
    c.pad_token_id = id_or_default(r, "pad_token_id", c.pad_token_id);
    if (r.contains_key("eos_token_id")) c.eos_token_ids = r.get_int_or_list("eos_token_id");
}

}  // namespace

bool is_llama_model_type(const std::string& model_type) {
    return model_type == "llama" || model_type == "mistral" || model_type == "qwen2";
}

LlamaConfig parse_llama_config(const ObjectReader& r, const std::string& model_type) {
    LlamaConfig c;
    if (model_type == "mistral") {
        c.intermediate_size = 14336;
        c.max_position_embeddings = 4096 * 32;
        c.sliding_window = 4096;
    } else if (model_type == "qwen2") {
        c.vocab_size = 151936;
        c.intermediate_size = 22016;
        c.max_position_embeddings = 32768;
        c.qkv_bias = true;
        c.bos_token_id.reset();
        c.eos_token_ids.clear();
    }
    parse_common(r, c);
    // num_key_value_heads: an explicit null means "as many as the query heads" in all three.
    const int64_t kv_absent = model_type == "mistral" ? 8 : model_type == "qwen2" ? 32 : c.num_attention_heads;
    c.num_key_value_heads = r.contains_key("num_key_value_heads") ? r.get_int("num_key_value_heads").value_or(c.num_attention_heads)
                                                                  : kv_absent;
    const int64_t derived_head_dim = c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
    const std::optional<int64_t> head_dim = r.get_int("head_dim");
    if (model_type == "qwen2") {
        // Qwen2Attention always derives it, while its rotary embedding would read a head_dim key: a
        // file whose head_dim disagrees cannot run in transformers either.
        if (head_dim && *head_dim != derived_head_dim)
            r.fail_field("head_dim", "Qwen2 derives head_dim from hidden_size / num_attention_heads (" +
                                         std::to_string(derived_head_dim) + ")");
        c.head_dim = derived_head_dim;
    } else {
        c.head_dim = head_dim && *head_dim != 0 ? *head_dim : derived_head_dim;
    }
    if (model_type == "llama") {
        c.attention_bias = r.get_bool("attention_bias", c.attention_bias);
        c.mlp_bias = r.get_bool("mlp_bias", c.mlp_bias);
    }
    if (model_type != "mistral" && r.has("rope_scaling")) {
        const Json* rs = r.find("rope_scaling");
        if (!rs->is_object()) r.fail_field("rope_scaling", "must be an object or null, got " + rs->dump());
        c.rope_scaling = parse_rope_scaling(*rs, r.path());
    }
    if (model_type == "mistral") {
        c.sliding_window = id_or_default(r, "sliding_window", c.sliding_window);
    } else if (model_type == "qwen2") {
        c.use_sliding_window = r.get_bool("use_sliding_window", false);
        c.max_window_layers = r.get_int("max_window_layers", c.max_window_layers);
        const std::optional<int64_t> window = id_or_default(r, "sliding_window", 4096);
        c.sliding_window = c.use_sliding_window ? window : std::nullopt;
    }
    return c;
}

void validate_llama_config(const LlamaConfig& c, const ObjectReader& r) {
    auto positive = [&](const char* field, int64_t value) {
        if (value <= 0) r.fail_field(field, "must be positive, got " + std::to_string(value));
    };
    positive("vocab_size", c.vocab_size);
    positive("hidden_size", c.hidden_size);
    positive("intermediate_size", c.intermediate_size);
    positive("num_attention_heads", c.num_attention_heads);
    positive("num_key_value_heads", c.num_key_value_heads);
    positive("head_dim", c.head_dim);
    positive("max_position_embeddings", c.max_position_embeddings);
    if (c.num_hidden_layers < 0) r.fail_field("num_hidden_layers", "must not be negative");
    if (c.num_attention_heads % c.num_key_value_heads)
        r.fail_field("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(c.num_attention_heads) + ")");
    if (c.head_dim % 2) r.fail_field("head_dim", "must be even: rotary embeddings rotate pairs of dimensions");
    if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) r.fail_field("rope_theta", "must be a positive number");
    if (c.sliding_window && *c.sliding_window <= 0) r.fail_field("sliding_window", "must be positive or null");
    if (c.rope_scaling) {
        const RopeScaling& s = *c.rope_scaling;
        if (s.rope_type != "default" && s.rope_type != "longrope" && !(s.factor > 0))
            r.fail_field("rope_scaling", "factor must be positive");
        const size_t half = static_cast<size_t>(c.head_dim / 2);
        if (s.rope_type == "longrope") {
            if (s.short_factor.size() != half || s.long_factor.size() != half)
                r.fail_field("rope_scaling", "short_factor and long_factor need head_dim / 2 = " + std::to_string(half) +
                                                 " entries each");
            if (!c.original_max_position_embeddings && !(s.factor > 0))
                r.fail_field("rope_scaling", "longrope needs a factor (or a top-level original_max_position_embeddings)");
        }
    }
}

void set_llama_generation_ids(const LlamaConfig& c, Json& merged) {
    auto set = [&merged](const char* key, std::optional<int64_t> value) {
        if (value) merged[key] = *value;
        else merged.erase(key);
    };
    set("bos_token_id", c.bos_token_id);
    set("pad_token_id", c.pad_token_id);
    if (c.eos_token_ids.empty()) merged.erase("eos_token_id");
    else if (c.eos_token_ids.size() == 1) merged["eos_token_id"] = c.eos_token_ids.front();
    else merged["eos_token_id"] = c.eos_token_ids;
}

}  // namespace lorascope::io
