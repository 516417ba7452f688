#include "serve_protocol.h"

#include <algorithm>
#include <mutex>
#include <random>

#include "lorascope/adapter.h"
#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "lorascope/params_json.h"
#include "serve_chat.h"

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
            invalid("unknown " + where + " `" + json_key_excerpt(item.key()) + "` (known: " + join(known) + ")");
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
    invalid(std::string("`") + field + "` " + json_excerpt(json(name)) + " is not an adapter of this server (loaded: " +
            join(model.adapters) + "); lorascope serve loads adapters at start-up with --adapter NAME=DIR, or " +
            "adapter_source \"local\" names one under --adapter-dir");
}

// LoRAX's adapter_id, adapter_source and merged_adapters: an adapter loaded at start-up, one under
// --adapter-dir (loaded by prepare_request), a merge of loaded ones, or the base model.
void parse_lorax_adapter(const json& p, ParsedRequest& r, const ServedModel& model) {
    const auto adapter = read_string(p, "adapter_id");
    const auto source = read_string(p, "adapter_source");
    const bool merged = p.contains("merged_adapters") && !p["merged_adapters"].is_null();
    if (merged && adapter) invalid("you must specify at most one of `adapter_id` or `merged_adapters`");
    if (source && *source != "local") {
        if (*source == "hub" || *source == "s3" || *source == "pbase")
            invalid("`adapter_source` \"" + *source + "\" is not supported by lorascope serve: adapters are never "
                    "downloaded; use \"local\" (a directory under --adapter-dir), or omit it for an adapter loaded "
                    "at start-up");
        invalid("`adapter_source` must be one of hub, local, s3, pbase");   // LoRAX's ADAPTER_SOURCES
    }
    if (source) {
        if (merged) invalid("`merged_adapters` merges adapters loaded at start-up: omit `adapter_source`");
        if (!adapter || adapter->empty())
            invalid("`adapter_source` \"local\" needs `adapter_id`: the adapter's directory under --adapter-dir");
        r.local_adapter = *adapter;
        r.adapter_label = *adapter;
        return;
    }
    if (merged) {
        const json& m = p["merged_adapters"];
        if (!m.is_object()) invalid("`merged_adapters` must be an object");
        AdapterMerge merge;
        try {
            merge = parse_adapter_merge(m.dump(), "merged_adapters");
        } catch (const Error& e) {
            invalid(e.what());
        }
        for (const auto& id : merge.ids)
            if (resolve_adapter(id, model, "merged_adapters.ids").empty())
                invalid("`merged_adapters.ids`: the base model has no adapter factors to merge");
        // Refused now, as PEFT refuses it, rather than as a 424 once the engine admits the request.
        try {
            check_merge_ranks(merge, model.adapter_ranks, "merged_adapters");
        } catch (const Error& e) {
            invalid(e.what());
        }
        r.adapter_label = merge_name(merge);
        r.request.merge = std::move(merge);
        return;
    }
    if (adapter) r.adapter_label = resolve_adapter(*adapter, model, "adapter_id");
    r.request.adapter = r.adapter_label;
}

// What the model weighed (issue 32) under LoRAX's names and rules (its router's validation).
void parse_lorax_inspection(const json& p, ParsedRequest& r, const ServedModel& model) {
    GenerationParams& g = r.request.params;
    if (auto k = read_int(p, "return_k_alternatives")) {
        if (*k < 1) invalid("`return_k_alternatives` must be strictly positive");
        if (*k > kMaxTopAlternatives)
            invalid("`return_k_alternatives` must be at most " + std::to_string(kMaxTopAlternatives));
        g.top_alternatives = *k;
    }
    if (auto t = read_int(p, "truncate")) {
        if (*t < 1) invalid("`truncate` must be strictly positive");
        g.truncate = *t;
    }
    const int64_t best_of = read_int(p, "best_of").value_or(1);
    if (best_of < 1) invalid("`best_of` must be strictly positive");
    if (best_of > 1) {
        if (best_of > kMaxBestOf) invalid("`best_of` must be at most " + std::to_string(kMaxBestOf));
        if (!g.do_sample.value_or(false)) invalid("you must use sampling when `best_of` is > 1");
        if (g.seed) invalid("`seed` must not be set when `best_of` is > 1");
        if (r.stream) invalid("`best_of` != 1 is not supported when `stream` == True");
        g.best_of = best_of;
    }
    r.decoder_input_details = read_bool(p, "decoder_input_details").value_or(false);
    if (r.decoder_input_details && r.stream)
        invalid("`decoder_input_details` == true is not supported when streaming tokens");
    // Decoder-only models score the prompt; an encoder-decoder's decoder input is its start token.
    if (r.decoder_input_details && !model.encoder_decoder) g.prompt_logprobs = true;
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
        // With the request's languages (mBART-50, NLLB); src_lang is spent once the engine gets ids.
        EncodeOptions encoding;
        encoding.add_special_tokens = r.add_special_tokens;
        encoding.src_lang = r.request.params.src_lang.value_or("");
        encoding.tgt_lang = r.request.params.tgt_lang.value_or("");
        std::vector<int64_t> ids = tokenizer->encode(r.inputs, encoding);
        int64_t prompt = static_cast<int64_t>(ids.size());
        const ResolvedGenerationParams resolved = resolve(r.request.params, model.generation_config, "parameters");
        if (resolved.truncate && prompt > *resolved.truncate && r.add_special_tokens) {
            // The engine truncates the text as Hugging Face's tokenizer does (special tokens kept),
            // so that the request equals `generate`'s: it gets the text, and tokenizes it again
            // (with src_lang, which it keeps for that).
            prompt = *resolved.truncate;
        } else {
            // A rendered conversation carries its special tokens in the text: it keeps its last ids.
            if (resolved.truncate && prompt > *resolved.truncate) {
                ids.erase(ids.begin(), ids.end() - *resolved.truncate);
                prompt = *resolved.truncate;
            }
            r.request.input_ids = std::move(ids);
            r.request.params.src_lang.reset();
            r.request.prompt.reset();
        }
        // As the engine counts them (engine/live_request.cpp): HF derives the default length from
        // generate()'s input_ids, the decoder start token for encoder-decoders.
        const int64_t input_ids_length = model.encoder_decoder ? 1 : prompt;
        r.max_new_tokens = resolved.max_new_tokens_for(input_ids_length);
        const int64_t rows = std::max<int64_t>(1, resolved.best_of);
        check_request_budget(rows, prompt, r.max_new_tokens, model.budget, "parameters");
    } catch (const Error& e) {
        // The tokenizer's errors (an unknown language code) name the model's directory: not the client's.
        invalid(e.path() == "parameters" ? e.what() : "parameters: " + e.message());
    }
}

std::string load_local_adapter_for(const std::string& requested, const AdapterDirectory* directory, Engine& engine) {
    if (!directory)
        invalid("`adapter_source` \"local\" is not enabled on this server: it takes local adapters only under the "
                "directory its operator allows with --adapter-dir DIR");
    try {
        return load_local_adapter(engine, *directory, requested);
    } catch (const Error& e) {
        invalid("`adapter_id` (adapter_source \"local\"): " + client_error_text(e.what()));
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
    refuse_if_set(p, "frequency_penalty", "use repetition_penalty");
    refuse_if_set(p, "presence_penalty", "use repetition_penalty");
    refuse_if_set(p, "watermark", "no watermarking");
    // LoRAX's chat form: `inputs` is the conversation, rendered with the model's template (serve_chat.h).
    if (read_bool(p, "apply_chat_template").value_or(false)) r.conversation = lorax_chat_inputs(*inputs);
    refuse_if_set(p, "response_format", "no constrained decoding");
    (void)read_string(p, "api_token");   // for private hub adapters on LoRAX; unused here, never logged
    parse_lorax_adapter(p, r, model);

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
    parse_lorax_inspection(p, r, model);
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
        // vLLM's bound (its max_logprobs, 20 by default); OpenAI's own API stops at 5.
        if (*lp < 0 || *lp > kMaxTopAlternatives)
            invalid("`logprobs` must be in [0, " + std::to_string(kMaxTopAlternatives) +
                    "]: the number of most likely tokens reported beside each chosen one");
        r.openai_logprobs = true;
        r.top_logprobs = *lp;
        if (*lp > 0) g.top_alternatives = *lp;
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
