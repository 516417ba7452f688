#include "serve_protocol.h"

#include <algorithm>
#include <mutex>
#include <random>

#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "lorascope/params_json.h"

namespace lorascope::serve {

using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& message) { throw HttpError(422, "validation", message); }

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "none" : out;
}

// Typed readers: null counts as absent, as LoRAX's serde(default) does.
std::optional<bool> read_bool(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) invalid(std::string("`") + key + "` must be true or false");
    return it->get<bool>();
}

std::optional<int64_t> read_int(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    if (it->is_number_unsigned()) {
        if (it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) invalid(std::string("`") + key + "` is too large");
        return static_cast<int64_t>(it->get<uint64_t>());
    }
    if (!it->is_number_integer()) invalid(std::string("`") + key + "` must be an integer");
    return it->get<int64_t>();
}

std::optional<std::string> read_string(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) invalid(std::string("`") + key + "` must be a string");
    return it->get<std::string>();
}

// `stop`: LoRAX takes a list of strings only, OpenAI one string too. The strings themselves (count,
// bytes, emptiness) are the parameter parser's to check.
void check_stop_shape(const json& o, bool allow_single) {
    auto it = o.find("stop");
    if (it == o.end() || it->is_null() || it->is_array() || (allow_single && it->is_string())) return;
    invalid(allow_single ? "`stop` must be a string or a list of strings" : "`stop` must be a list of strings");
}

// The knobs `names` picks from `o`, under the engine's parameter names (theirs -> ours).
json pick(const json& o, const std::vector<std::pair<const char*, const char*>>& names) {
    json knobs = json::object();
    for (const auto& [theirs, ours] : names)
        if (auto it = o.find(theirs); it != o.end() && !it->is_null()) knobs[ours] = *it;
    return knobs;
}

// Through the one parameter parser: its types, ranges and bounds are every door's.
GenerationParams parse_knobs(const json& knobs, const ServedModel& model, const char* source) {
    try {
        return generation_params_from_json(knobs, source, model.params);
    } catch (const Error& e) {
        invalid(e.what());
    }
}

void allow_keys(const json& o, const std::vector<std::string>& known, const std::string& where) {
    for (const auto& item : o.items())
        if (std::find(known.begin(), known.end(), item.key()) == known.end())
            invalid("unknown " + where + " `" + item.key() + "` (known: " + join(known) + ")");
}

// Parameters a LoRAX server accepts but this one does not implement: refused by name rather than
// ignored, so that a script learns why its request would behave differently here.
void refuse_if_set(const json& o, const char* key, const std::string& why) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return;
    if (it->is_boolean() && !it->get<bool>()) return;
    if (it->is_number() && it->get<double>() == 0) return;
    if (it->is_object() && it->empty()) return;
    invalid(std::string("`") + key + "` is not supported by lorascope serve: " + why);
}

std::string resolve_adapter(const std::string& name, const ServedModel& model, const char* field) {
    if (name.empty() || name == model.model_id) return "";
    if (std::find(model.adapters.begin(), model.adapters.end(), name) != model.adapters.end()) return name;
    invalid(std::string("`") + field + "` \"" + name + "\" is not an adapter of this server (loaded: " +
            join(model.adapters) + "); lorascope serve loads adapters at start-up with --adapter NAME=DIR");
}

uint64_t fresh_seed() {
    // 53 bits: the seed is reported back in JSON and must survive clients that read numbers as doubles.
    static std::mutex mutex;
    static std::mt19937_64 generator{std::random_device{}()};
    std::lock_guard<std::mutex> lock(mutex);
    return generator() & ((uint64_t{1} << 53) - 1);
}

// Checks the engine would accept the parameters, so that bad values are a 422 now rather than
// an error event after a 200 has been sent.
void validate_with_engine(ParsedRequest& r, const ServedModel& model) {
    try {
        const ResolvedGenerationParams resolved = resolve(r.request.params, model.generation_config, "parameters");
        r.sampling = resolved.do_sample;
        if (r.sampling && !r.request.params.seed) r.request.params.seed = fresh_seed();
        if (r.sampling) r.seed = r.request.params.seed;
    } catch (const Error& e) {
        invalid(e.message());
    }
}

// OpenAI's sampling fields: its own names and ranges first, then the engine's parser under the
// engine's names. As in OpenAI and vLLM, temperature defaults to 1 and 0 decodes greedily.
GenerationParams openai_params(const json& body, const ServedModel& model) {
    check_stop_shape(body, true);
    double temperature = 1.0;
    if (auto t = body.find("temperature"); t != body.end() && !t->is_null()) {
        if (!t->is_number()) invalid("`temperature` must be a number");
        temperature = t->get<double>();
        if (!(temperature >= 0 && temperature <= 2)) invalid("`temperature` must be in [0, 2]");
    }
    const int64_t max_tokens = read_int(body, "max_tokens").value_or(16);   // OpenAI's and vLLM's default
    if (max_tokens < 1) invalid("`max_tokens` must be strictly positive");
    const bool ignore_eos = read_bool(body, "ignore_eos_token").value_or(read_bool(body, "ignore_eos").value_or(false));
    json knobs = pick(body, {{"top_p", "top_p"}, {"top_k", "top_k"}, {"repetition_penalty", "repetition_penalty"},
                             {"stop", "stop"}, {"seed", "seed"}, {"src_lang", "src_lang"}, {"tgt_lang", "tgt_lang"}});
    if (knobs.contains("top_k") && knobs["top_k"] == -1) knobs["top_k"] = 0;   // vLLM's "disabled"
    if (temperature > 0) knobs["temperature"] = temperature;                  // 0: greedy decoding
    knobs["max_new_tokens"] = max_tokens;
    GenerationParams g = parse_knobs(knobs, model, "request");
    g.do_sample = temperature > 0;
    g.temperature = g.temperature.value_or(1.0);
    g.top_p = g.top_p.value_or(1.0);
    g.top_k = g.top_k.value_or(0);
    g.typical_p = 1.0;
    g.repetition_penalty = g.repetition_penalty.value_or(1.0);
    g.ignore_eos = ignore_eos;
    g.num_beams = 1;
    g.num_return_sequences = 1;
    return g;
}

}  // namespace

json error_body(const std::string& message, const std::string& error_type) {
    return {{"error", message}, {"error_type", error_type}};
}

json parse_json_object(const std::string& body) {
    json value;
    try {
        value = parse_json_input(body, "the request body", JsonLimits{}, ErrorKind::InvalidArgument);
    } catch (const Error& e) {
        throw HttpError(400, "invalid_input", "the request body is not valid JSON: " + e.message());
    }
    if (!value.is_object()) throw HttpError(400, "invalid_input", "the request body must be a JSON object");
    return value;
}

void fit_to_budget(ParsedRequest& r, const ServedModel& model, const Tokenizer* tokenizer) {
    if (!tokenizer)
        invalid("the served model has no tokenizer files, so it cannot take text prompts");
    try {
        // With the request's languages (mBART-50, NLLB); src_lang is then spent: the engine gets ids.
        EncodeOptions encoding;
        encoding.src_lang = r.request.params.src_lang.value_or("");
        encoding.tgt_lang = r.request.params.tgt_lang.value_or("");
        r.request.input_ids = tokenizer->encode(r.inputs, encoding);
        r.request.params.src_lang.reset();
        r.request.prompt.reset();
        const int64_t prompt = static_cast<int64_t>(r.request.input_ids.size());
        // As the engine counts them (engine/live_request.cpp): HF derives the default length from
        // generate()'s input_ids, the decoder start token for encoder-decoders.
        const int64_t input_ids_length = model.encoder_decoder ? 1 : prompt;
        const ResolvedGenerationParams resolved = resolve(r.request.params, model.generation_config, "parameters");
        check_request_budget(1, prompt, resolved.max_new_tokens_for(input_ids_length), model.budget, "parameters");
    } catch (const Error& e) {
        // The tokenizer's errors (an unknown language code) name the model's directory: not the client's.
        invalid(e.path() == "parameters" ? e.what() : "parameters: " + e.message());
    }
}

std::string client_error_text(const std::string& engine_error) {
    constexpr size_t kMaxChars = 300;
    const std::string line = engine_error.substr(0, engine_error.find('\n'));
    std::string out;
    size_t i = 0;
    while (i < line.size() && out.size() <= kMaxChars) {
        // An absolute path starts a word ("/srv/models/x: ...", "in /srv/models/x") and runs to
        // the next space, quote or the colon that ends it.
        const bool word_start = i == 0 || line[i - 1] == ' ' || line[i - 1] == '\'' || line[i - 1] == '"' ||
                                line[i - 1] == '(';
        if (line[i] == '/' && word_start && i + 1 < line.size() && line[i + 1] != ' ') {
            size_t end = i;
            while (end < line.size() && line[end] != ' ' && line[end] != '\'' && line[end] != '"' && line[end] != ')' &&
                   !(line[end] == ':' && (end + 1 == line.size() || line[end + 1] == ' ')))
                ++end;
            out += "<path>";
            i = end;
            continue;
        }
        out += line[i++];
    }
    if (out.size() > kMaxChars) out = out.substr(0, kMaxChars) + "...";
    return out;
}

ParsedRequest parse_lorax_request(const json& body, const ServedModel& model, std::optional<bool> stream_by_route) {
    allow_keys(body, {"inputs", "parameters", "stream"}, "field");
    ParsedRequest r;
    auto inputs = read_string(body, "inputs");
    if (!inputs) invalid("`inputs` is required (the prompt text)");
    if (inputs->empty()) invalid("`inputs` cannot be empty");
    r.inputs = *inputs;
    r.request.prompt = *inputs;
    r.stream = stream_by_route ? *stream_by_route : read_bool(body, "stream").value_or(false);

    json p = json::object();
    if (auto it = body.find("parameters"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) invalid("`parameters` must be an object");
        p = *it;
    }
    allow_keys(p,
               {"adapter_id", "adapter_source", "merged_adapters", "api_token", "best_of", "temperature",
                "repetition_penalty", "frequency_penalty", "presence_penalty", "top_k", "top_p", "typical_p",
                "do_sample", "max_new_tokens", "ignore_eos_token", "return_full_text", "stop", "truncate",
                "watermark", "details", "decoder_input_details", "return_k_alternatives", "apply_chat_template",
                "seed", "response_format", "src_lang", "tgt_lang"},
               "parameter");
    refuse_if_set(p, "adapter_source", "only the adapters loaded at start-up are served; omit adapter_source");
    refuse_if_set(p, "merged_adapters", "adapters are not merged per request");
    refuse_if_set(p, "frequency_penalty", "use repetition_penalty");
    refuse_if_set(p, "presence_penalty", "use repetition_penalty");
    refuse_if_set(p, "truncate", "prompts are not truncated");
    refuse_if_set(p, "watermark", "no watermarking");
    refuse_if_set(p, "return_k_alternatives", "the engine reports only the chosen token's logprob");
    refuse_if_set(p, "apply_chat_template", "no chat templates");
    refuse_if_set(p, "response_format", "no constrained decoding");
    (void)read_string(p, "api_token");   // for private hub adapters on LoRAX; unused here, never logged
    if (auto best_of = read_int(p, "best_of")) {
        if (*best_of < 1) invalid("`best_of` must be strictly positive");
        if (*best_of > 1) invalid("`best_of` > 1 is not supported by lorascope serve (it decodes one sequence per request)");
    }

    if (auto adapter = read_string(p, "adapter_id")) r.adapter_label = resolve_adapter(*adapter, model, "adapter_id");
    r.request.adapter = r.adapter_label;

    check_stop_shape(p, false);
    (void)read_bool(p, "ignore_eos_token");   // its type, under LoRAX's name
    GenerationParams& g = r.request.params;
    g = parse_knobs(pick(p, {{"temperature", "temperature"}, {"top_k", "top_k"}, {"top_p", "top_p"},
                             {"typical_p", "typical_p"}, {"repetition_penalty", "repetition_penalty"},
                             {"do_sample", "do_sample"}, {"max_new_tokens", "max_new_tokens"},
                             {"ignore_eos_token", "ignore_eos"}, {"stop", "stop"}, {"seed", "seed"},
                             {"src_lang", "src_lang"}, {"tgt_lang", "tgt_lang"}}),
                    model, "parameters");
    // LoRAX refuses what the engine would take as "off".
    if (g.temperature && *g.temperature == 0) invalid("`temperature` must be strictly positive");
    if (g.top_k && *g.top_k == 0) invalid("`top_k` must be strictly positive");
    // LoRAX's request alone decides the decoding: absent knobs are off, not generation_config's.
    g.do_sample = g.do_sample.value_or(false) || (g.temperature && *g.temperature != 1.0) || g.top_k ||
                  (g.top_p && *g.top_p < 1.0) || (g.typical_p && *g.typical_p < 1.0);
    g.temperature = g.temperature.value_or(1.0);
    g.top_k = g.top_k.value_or(0);
    g.top_p = g.top_p.value_or(1.0);
    g.typical_p = g.typical_p.value_or(1.0);
    g.repetition_penalty = g.repetition_penalty.value_or(1.0);
    g.ignore_eos = g.ignore_eos.value_or(false);
    g.num_beams = 1;                 // one sequence per request, whatever generation_config.json says
    g.num_return_sequences = 1;
    g.logprobs = true;   // every streamed token carries its logprob, as in LoRAX
    r.return_full_text = read_bool(p, "return_full_text").value_or(false);
    r.details = read_bool(p, "details").value_or(false);
    r.decoder_input_details = read_bool(p, "decoder_input_details").value_or(false);
    if (r.decoder_input_details && !model.encoder_decoder)
        invalid("`decoder_input_details` needs prompt-token logprobs, which lorascope serve does not compute for "
                "decoder-only models");
    validate_with_engine(r, model);
    return r;
}

ParsedRequest parse_openai_completion(const json& body, const ServedModel& model) {
    allow_keys(body,
               {"model", "prompt", "suffix", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options",
                "logprobs", "echo", "stop", "presence_penalty", "frequency_penalty", "best_of", "logit_bias", "user",
                "seed", "repetition_penalty", "top_k", "ignore_eos_token", "ignore_eos", "adapter_source",
                "api_token", "src_lang", "tgt_lang"},
               "field");
    ParsedRequest r;
    auto name = read_string(body, "model");
    if (!name) invalid("`model` is required: the served model's id or an adapter's name");
    r.model = *name;
    r.adapter_label = resolve_adapter(*name, model, "model");
    r.request.adapter = r.adapter_label;

    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) invalid("`prompt` is required");
    if (it->is_array()) {
        if (it->size() != 1 || !(*it)[0].is_string())
            invalid("`prompt` must be one string (a list of prompts is not supported: send one request each)");
        r.inputs = (*it)[0].get<std::string>();
    } else if (it->is_string()) {
        r.inputs = it->get<std::string>();
    } else {
        invalid("`prompt` must be a string");
    }
    if (r.inputs.empty()) invalid("`prompt` cannot be empty");
    r.request.prompt = r.inputs;

    refuse_if_set(body, "suffix", "no insertion");
    refuse_if_set(body, "presence_penalty", "use repetition_penalty");
    refuse_if_set(body, "frequency_penalty", "use repetition_penalty");
    refuse_if_set(body, "logit_bias", "no logit bias");
    refuse_if_set(body, "adapter_source", "only the adapters loaded at start-up are served; omit adapter_source");
    (void)read_string(body, "api_token");
    (void)read_string(body, "user");
    if (auto so = body.find("stream_options"); so != body.end() && !so->is_null() && !so->is_object())
        invalid("`stream_options` must be an object");
    for (const char* key : {"n", "best_of"})
        if (auto n = read_int(body, key); n && *n != 1)
            invalid(std::string("`") + key + "` must be 1: lorascope serve decodes one sequence per request");

    r.request.params = openai_params(body, model);
    GenerationParams& g = r.request.params;
    g.logprobs = true;
    if (auto lp = read_int(body, "logprobs")) {
        if (*lp < 0) invalid("`logprobs` must be 0 or 1");
        if (*lp > 1)
            invalid("`logprobs` > 1 asks for alternative tokens, which lorascope serve does not report; use 0 or 1 "
                    "for the chosen token's logprob");
        r.openai_logprobs = true;
    }
    r.echo = read_bool(body, "echo").value_or(false);
    r.return_full_text = r.echo;
    r.stream = read_bool(body, "stream").value_or(false);
    r.details = true;
    validate_with_engine(r, model);
    return r;
}

const char* lorax_finish_reason(FinishReason reason) {
    switch (reason) {
        case FinishReason::Length: return "length";
        case FinishReason::Eos: return "eos_token";
        case FinishReason::Stop: return "stop_sequence";
        default: return "length";
    }
}

const char* openai_finish_reason(FinishReason reason) {
    return reason == FinishReason::Length ? "length" : "stop";
}

nlohmann::json openai_stop_reason(const FinishEvent& finish) {
    if (finish.reason == FinishReason::Stop) return finish.stop_sequence;
    return nullptr;
}

}  // namespace lorascope::serve
