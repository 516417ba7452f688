#include "lorascope/params.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "lorascope/params_json.h"

namespace lorascope {

const char* to_string(EarlyStopping value) {
    switch (value) {
        case EarlyStopping::False: return "false";
        case EarlyStopping::True: return "true";
        case EarlyStopping::Never: return "never";
    }
    return "false";
}

namespace {

using Json = nlohmann::json;

std::string format_number(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

[[noreturn]] void reject(const std::string& source, const std::string& message) {
    throw Error(ErrorKind::InvalidArgument, source, message);
}

const char* json_type_name(const Json& value) {
    if (value.is_boolean()) return "a boolean";
    if (value.is_number_integer()) return "an integer";
    if (value.is_number_float()) return "a number";
    if (value.is_string()) return "a string";
    if (value.is_array()) return "a list";
    if (value.is_object()) return "an object";
    return "null";
}

[[noreturn]] void wrong_type(const std::string& source, const std::string& field, const char* expected,
                             const Json& value) {
    reject(source, "parameter '" + field + "' must be " + expected + ", got " + json_type_name(value) +
                       " (" + json_excerpt(value) + ")");
}

int64_t read_int(const std::string& source, const std::string& field, const Json& value) {
    if (value.is_number_unsigned()) {
        if (value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            reject(source, "parameter '" + field + "' is too large (" + json_excerpt(value) + ")");
        return static_cast<int64_t>(value.get<uint64_t>());
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    wrong_type(source, field, "an integer", value);
}

double read_double(const std::string& source, const std::string& field, const Json& value) {
    if (!value.is_number()) wrong_type(source, field, "a number", value);
    const double d = value.get<double>();
    if (!std::isfinite(d)) reject(source, "parameter '" + field + "' must be a finite number");
    return d;
}

bool read_bool(const std::string& source, const std::string& field, const Json& value) {
    if (!value.is_boolean()) wrong_type(source, field, "true or false", value);
    return value.get<bool>();
}

// Range checks shared by parsing (explicit values) and resolution (merged values), so that a
// bad value reads the same whether it came from the request or from generation_config.json.
// The bounds and why: lorascope/params.h, check_generation_params.
constexpr double kMinTemperature = 1e-4, kMaxTemperature = 1e4;
constexpr double kMinPenalty = 1e-4, kMaxPenalty = 1e4;
constexpr double kMaxLengthPenalty = 10;

void check_ranges(const GenerationParams& p, const std::string& source) {
    auto at_least = [&](const char* field, const std::optional<int64_t>& v, int64_t low) {
        if (v && *v < low)
            reject(source, std::string(field) + " must be " + (low == 0 ? "0 or more" : "at least " + std::to_string(low)) +
                               ", got " + std::to_string(*v));
    };
    auto within = [&](const char* field, const std::optional<double>& v, double low, double high, const char* note) {
        if (v && !(*v >= low && *v <= high))
            reject(source, std::string(field) + " must be in [" + format_number(low) + ", " + format_number(high) + "]" +
                               note + ", got " + format_number(*v));
    };
    at_least("max_new_tokens", p.max_new_tokens, 1);
    at_least("min_new_tokens", p.min_new_tokens, 0);
    at_least("top_k", p.top_k, 0);
    at_least("no_repeat_ngram_size", p.no_repeat_ngram_size, 0);
    at_least("num_beams", p.num_beams, 1);
    at_least("num_return_sequences", p.num_return_sequences, 1);
    at_least("top_alternatives", p.top_alternatives, 0);
    at_least("best_of", p.best_of, 1);
    at_least("truncate", p.truncate, 1);
    if (p.top_alternatives && *p.top_alternatives > kMaxTopAlternatives)
        reject(source, "top_alternatives must be at most " + std::to_string(kMaxTopAlternatives) + ", got " +
                           std::to_string(*p.top_alternatives));
    if (p.best_of && *p.best_of > kMaxBestOf)
        reject(source, "best_of must be at most " + std::to_string(kMaxBestOf) + ", got " + std::to_string(*p.best_of));
    if (p.temperature && *p.temperature < 0)
        reject(source, "temperature must be greater than 0, got " + format_number(*p.temperature));
    if (p.temperature && *p.temperature != 0)
        within("temperature", p.temperature, kMinTemperature, kMaxTemperature,
               " (or 0 for greedy decoding: beyond it the scaled logits overflow float32)");
    if (p.top_p && !(*p.top_p > 0 && *p.top_p <= 1))
        reject(source, "top_p must be in (0, 1] (1 disables it), got " + format_number(*p.top_p));
    if (p.typical_p && !(*p.typical_p > 0 && *p.typical_p <= 1))
        reject(source, "typical_p must be in (0, 1] (1 disables it), got " + format_number(*p.typical_p));
    if (p.min_p && !(*p.min_p >= 0 && *p.min_p <= 1))
        reject(source, "min_p must be in [0, 1], got " + format_number(*p.min_p));
    if (p.repetition_penalty && !(*p.repetition_penalty > 0))
        reject(source, "repetition_penalty must be greater than 0 (1 disables it), got " +
                           format_number(*p.repetition_penalty));
    within("repetition_penalty", p.repetition_penalty, kMinPenalty, kMaxPenalty, " (1 disables it)");
    within("length_penalty", p.length_penalty, -kMaxLengthPenalty, kMaxLengthPenalty, "");
}

void check_languages(const GenerationParams& p, const std::string& source, const ParamLimits& limits) {
    for (const auto* field : {&p.src_lang, &p.tgt_lang}) {
        if (!*field) continue;
        const char* name = field == &p.src_lang ? "src_lang" : "tgt_lang";
        if ((*field)->empty()) reject(source, std::string(name) + " must not be empty (omit it for the model's default)");
        if (static_cast<int64_t>((*field)->size()) > limits.max_language_bytes)
            reject(source, std::string(name) + " of " + std::to_string((*field)->size()) +
                               " bytes is longer than any language code (at most " +
                               std::to_string(limits.max_language_bytes) + ")");
    }
}

void check_stops(const GenerationParams& p, const std::string& source, const ParamLimits& limits) {
    if (!p.stop) return;
    if (static_cast<int64_t>(p.stop->size()) > limits.max_stop_sequences)
        reject(source, "stop holds " + std::to_string(p.stop->size()) + " sequences; at most " +
                           std::to_string(limits.max_stop_sequences) + " are allowed");
    for (const std::string& s : *p.stop) {
        if (s.empty()) reject(source, "stop sequences must not be empty strings");
        if (static_cast<int64_t>(s.size()) > limits.max_stop_bytes)
            reject(source, "a stop sequence of " + std::to_string(s.size()) + " bytes is longer than the " +
                               std::to_string(limits.max_stop_bytes) + " allowed");
    }
}

// What issue 32's parameters cannot be combined with (after merging, so that generation_config.json's
// beams count too).
void check_inspection(const ResolvedGenerationParams& r, const std::string& source) {
    if (r.top_alternatives > 0 && r.num_beams > 1)
        reject(source, "top_alternatives is not supported with beam search (num_beams > 1): a beam's scores are not "
                       "the distribution its token was chosen from");
    if (r.best_of <= 1) return;
    // As LoRAX's router: best_of picks among sampled candidates.
    if (!r.do_sample) reject(source, "best_of (" + std::to_string(r.best_of) + ") needs sampling: set do_sample to true");
    if (r.num_beams > 1) reject(source, "best_of is not supported with beam search (num_beams > 1)");
    if (r.num_return_sequences > 1)
        reject(source, "best_of and num_return_sequences > 1 cannot be combined: best_of returns its best candidate first "
                       "and the others after it");
    if (!r.stop.empty()) reject(source, "stop sequences are not supported with best_of > 1");
}

}  // namespace

void check_generation_params(const GenerationParams& params, const std::string& source, const ParamLimits& limits) {
    check_ranges(params, source);
    check_stops(params, source, limits);
    check_languages(params, source, limits);
}

GenerationParams generation_params_from_json(const Json& object, const std::string& source, const ParamLimits& limits) {
    if (!object.is_object()) reject(source, std::string("params must be a JSON object, got ") + json_type_name(object));
    GenerationParams p;
    for (auto it = object.begin(); it != object.end(); ++it) {
        const std::string& key = it.key();
        const Json& v = it.value();
        if (v.is_null()) continue;  // null means "unspecified", as in Hugging Face's configs
        if (key == "max_new_tokens") p.max_new_tokens = read_int(source, key, v);
        else if (key == "min_new_tokens") p.min_new_tokens = read_int(source, key, v);
        else if (key == "do_sample") p.do_sample = read_bool(source, key, v);
        else if (key == "temperature") p.temperature = read_double(source, key, v);
        else if (key == "top_k") p.top_k = read_int(source, key, v);
        else if (key == "top_p") p.top_p = read_double(source, key, v);
        else if (key == "typical_p") p.typical_p = read_double(source, key, v);
        else if (key == "min_p") p.min_p = read_double(source, key, v);
        else if (key == "repetition_penalty") p.repetition_penalty = read_double(source, key, v);
        else if (key == "no_repeat_ngram_size") p.no_repeat_ngram_size = read_int(source, key, v);
        else if (key == "num_beams") p.num_beams = read_int(source, key, v);
        else if (key == "num_return_sequences") p.num_return_sequences = read_int(source, key, v);
        else if (key == "length_penalty") p.length_penalty = read_double(source, key, v);
        else if (key == "early_stopping") {
            if (v.is_boolean()) p.early_stopping = v.get<bool>() ? EarlyStopping::True : EarlyStopping::False;
            else if (v.is_string() && v.get<std::string>() == "never") p.early_stopping = EarlyStopping::Never;
            else wrong_type(source, key, "true, false or \"never\"", v);
        } else if (key == "stop") {
            // A single string is accepted as a list of one, as OpenAI-style APIs do.
            std::vector<std::string> stops;
            if (v.is_string()) stops.push_back(v.get<std::string>());
            else if (v.is_array()) {
                for (const Json& s : v) {
                    if (!s.is_string()) wrong_type(source, key, "a list of strings", v);
                    stops.push_back(s.get<std::string>());
                }
            } else wrong_type(source, key, "a string or a list of strings", v);
            p.stop = std::move(stops);
        } else if (key == "seed") {
            if (!v.is_number_integer()) wrong_type(source, key, "an integer", v);
            if (!v.is_number_unsigned() && v.get<int64_t>() < 0)
                reject(source, "seed must be 0 or more, got " + json_excerpt(v));
            p.seed = v.get<uint64_t>();
        } else if (key == "ignore_eos") p.ignore_eos = read_bool(source, key, v);
        else if (key == "logprobs") p.logprobs = read_bool(source, key, v);
        else if (key == "top_alternatives") p.top_alternatives = read_int(source, key, v);
        else if (key == "prompt_logprobs") p.prompt_logprobs = read_bool(source, key, v);
        else if (key == "best_of") p.best_of = read_int(source, key, v);
        else if (key == "truncate") p.truncate = read_int(source, key, v);
        else if (key == "src_lang" || key == "tgt_lang") {
            if (!v.is_string()) wrong_type(source, key, "a language code (a string)", v);
            (key == "src_lang" ? p.src_lang : p.tgt_lang) = v.get<std::string>();
        } else
            reject(source, "unknown parameter '" + json_key_excerpt(key) +
                               "' (known: max_new_tokens, min_new_tokens, do_sample, temperature, top_k, top_p, "
                               "typical_p, min_p, repetition_penalty, no_repeat_ngram_size, num_beams, num_return_sequences, "
                               "length_penalty, early_stopping, stop, seed, ignore_eos, logprobs, top_alternatives, "
                               "prompt_logprobs, best_of, truncate, src_lang, tgt_lang)");
    }
    check_generation_params(p, source, limits);
    return p;
}


GenerationParams parse_generation_params(const std::string& json_object_text, const std::string& source,
                                         const ParamLimits& limits) {
    Json object;
    try {
        object = parse_json_input(json_object_text, source, limits.json, ErrorKind::InvalidArgument);
    } catch (const Error& e) {
        reject(source, "params are not valid JSON: " + e.message());
    }
    return generation_params_from_json(object, source, limits);
}

int64_t ResolvedGenerationParams::max_new_tokens_for(int64_t input_ids_length) const {
    if (max_new_tokens) return *max_new_tokens;
    // transformers refuses max_length <= input length rather than generating nothing.
    if (input_ids_length >= max_length)
        throw Error(ErrorKind::InvalidArgument, "params",
                    "the input is " + std::to_string(input_ids_length) +
                        " tokens long but generation_config.json's max_length is " + std::to_string(max_length) +
                        ", which leaves no room to generate; set max_new_tokens");
    return max_length - input_ids_length;
}

int64_t ResolvedGenerationParams::min_new_tokens_for(int64_t input_ids_length) const {
    if (min_new_tokens) return *min_new_tokens;
    return min_length > input_ids_length ? min_length - input_ids_length : 0;
}

ResolvedGenerationParams resolve(const GenerationParams& p, const GenerationConfig& c, const std::string& source) {
    ResolvedGenerationParams r;
    // A request's max_new_tokens wins over everything; otherwise generation_config's own
    // max_new_tokens, else its max_length (HF's default 20), as GenerationMixin does.
    r.max_new_tokens = p.max_new_tokens ? p.max_new_tokens : c.max_new_tokens;
    r.max_length = c.max_length.value_or(20);
    r.min_new_tokens = p.min_new_tokens ? p.min_new_tokens : c.min_new_tokens;
    r.min_length = c.min_length;
    r.do_sample = p.do_sample.value_or(c.do_sample);
    r.temperature = p.temperature.value_or(c.temperature);
    r.top_k = p.top_k.value_or(c.top_k);
    r.top_p = p.top_p.value_or(c.top_p);
    r.typical_p = p.typical_p.value_or(c.typical_p);
    r.min_p = p.min_p ? p.min_p : c.min_p;
    r.repetition_penalty = p.repetition_penalty.value_or(c.repetition_penalty);
    r.no_repeat_ngram_size = p.no_repeat_ngram_size.value_or(c.no_repeat_ngram_size);
    r.num_beams = p.num_beams.value_or(c.num_beams);
    r.num_return_sequences = p.num_return_sequences.value_or(c.num_return_sequences);
    r.length_penalty = p.length_penalty.value_or(c.length_penalty);
    r.early_stopping = p.early_stopping.value_or(c.early_stopping ? EarlyStopping::True : EarlyStopping::False);
    r.stop = p.stop.value_or(std::vector<std::string>{});
    r.seed = p.seed;
    r.ignore_eos = p.ignore_eos.value_or(false);
    r.logprobs = p.logprobs.value_or(false);
    r.top_alternatives = p.top_alternatives.value_or(0);
    r.prompt_logprobs = p.prompt_logprobs.value_or(false);
    r.best_of = p.best_of.value_or(1);
    r.truncate = p.truncate;
    r.eos_token_ids = c.eos_token_ids;
    r.forced_bos_token_id = c.forced_bos_token_id;
    r.forced_eos_token_id = c.forced_eos_token_id;
    for (const auto& seq : c.bad_words_ids) {
        const bool is_eos = seq.size() == 1 && std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), seq[0]) != c.eos_token_ids.end();
        if (!is_eos) r.bad_words_ids.push_back(seq);
    }
    r.renormalize_logits = c.renormalize_logits;

    // Validate the merged values: generation_config.json can be wrong too.
    GenerationParams merged;
    merged.max_new_tokens = r.max_new_tokens;
    merged.min_new_tokens = r.min_new_tokens;
    merged.temperature = r.temperature;
    merged.top_k = r.top_k;
    merged.top_p = r.top_p;
    merged.typical_p = r.typical_p;
    merged.min_p = r.min_p;
    merged.repetition_penalty = r.repetition_penalty;
    merged.no_repeat_ngram_size = r.no_repeat_ngram_size;
    merged.num_beams = r.num_beams;
    merged.num_return_sequences = r.num_return_sequences;
    merged.length_penalty = r.length_penalty;
    merged.stop = r.stop;
    check_generation_params(merged, source);
    if (r.max_length < 1) reject(source, "generation_config.json's max_length must be at least 1, got " + std::to_string(r.max_length));
    if (r.do_sample && !(r.temperature > 0))
        reject(source, "temperature must be greater than 0 when do_sample is true, got " + format_number(r.temperature) +
                           " (for greedy decoding set do_sample to false)");
    if (r.max_new_tokens && r.min_new_tokens && *r.min_new_tokens > *r.max_new_tokens)
        reject(source, "min_new_tokens (" + std::to_string(*r.min_new_tokens) + ") is larger than max_new_tokens (" +
                           std::to_string(*r.max_new_tokens) + ")");
    // As transformers' GenerationConfig.validate and _prepare_..._expansion refuse them.
    if (r.num_return_sequences > 1 && r.num_beams == 1 && !r.do_sample)
        reject(source, "num_return_sequences (" + std::to_string(r.num_return_sequences) +
                           ") needs beam search (num_beams > 1): greedy decoding returns one sequence");
    if (r.num_return_sequences > r.num_beams && r.num_beams > 1)
        reject(source, "num_return_sequences (" + std::to_string(r.num_return_sequences) +
                           ") must be at most num_beams (" + std::to_string(r.num_beams) + ")");
    if (r.num_return_sequences > 1 && r.num_beams == 1 && !r.stop.empty())
        reject(source, "stop sequences are not supported with num_return_sequences > 1");
    if (r.num_beams > 1 && !r.stop.empty())
        reject(source, "stop sequences are not supported with beam search (num_beams > 1)");
    check_inspection(r, source);
    return r;
}

}  // namespace lorascope
