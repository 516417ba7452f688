#include "serve_protocol.h"

#include <algorithm>
#include <mutex>
#include <random>

#include "lorascope/error.h"
#include "lorascope/params.h"

namespace lorascope::cli::serve {

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

std::optional<double> read_number(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    if (!it->is_number()) invalid(std::string("`") + key + "` must be a number");
    return it->get<double>();
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

std::optional<uint64_t> read_seed(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return std::nullopt;
    if (it->is_number_unsigned()) return it->get<uint64_t>();
    if (it->is_number_integer()) invalid(std::string("`") + key + "` must be a non-negative integer");
    invalid(std::string("`") + key + "` must be an integer");
}

// `stop`: a list of strings (LoRAX), or one string too (OpenAI).
std::vector<std::string> read_stop(const json& o, bool allow_single, int64_t max_count) {
    std::vector<std::string> stop;
    auto it = o.find("stop");
    if (it == o.end() || it->is_null()) return stop;
    if (allow_single && it->is_string()) {
        stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
        for (const auto& s : *it) {
            if (!s.is_string()) invalid("`stop` must be a list of strings");
            stop.push_back(s.get<std::string>());
        }
    } else {
        invalid(allow_single ? "`stop` must be a string or a list of strings" : "`stop` must be a list of strings");
    }
    for (const auto& s : stop)
        if (s.empty()) invalid("`stop` holds an empty string, which would stop before the first token");
    if (static_cast<int64_t>(stop.size()) > max_count)
        invalid("`stop` holds " + std::to_string(stop.size()) + " sequences; at most " + std::to_string(max_count) +
                " are allowed");
    return stop;
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
        if (resolved.is_beam_search()) invalid("beam search is not offered by lorascope serve");
        r.sampling = resolved.do_sample;
        if (r.sampling && !r.request.params.seed) r.request.params.seed = fresh_seed();
        if (r.sampling) r.seed = r.request.params.seed;
    } catch (const Error& e) {
        invalid(e.message());
    }
}

}  // namespace

json error_body(const std::string& message, const std::string& error_type) {
    return {{"error", message}, {"error_type", error_type}};
}

json parse_json_object(const std::string& body) {
    json value;
    try {
        value = json::parse(body);
    } catch (const json::parse_error& e) {
        throw HttpError(400, "invalid_input", std::string("the request body is not valid JSON: ") + e.what());
    }
    if (!value.is_object()) throw HttpError(400, "invalid_input", "the request body must be a JSON object");
    return value;
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
                "seed", "response_format"},
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

    GenerationParams& g = r.request.params;
    const auto temperature = read_number(p, "temperature");
    const auto top_k = read_int(p, "top_k");
    const auto top_p = read_number(p, "top_p");
    const auto typical_p = read_number(p, "typical_p");
    const auto repetition_penalty = read_number(p, "repetition_penalty");
    if (temperature && !(*temperature > 0)) invalid("`temperature` must be strictly positive");
    if (top_k && *top_k <= 0) invalid("`top_k` must be strictly positive");
    if (top_p && !(*top_p > 0 && *top_p <= 1)) invalid("`top_p` must be > 0.0 and <= 1.0");
    if (typical_p && !(*typical_p > 0 && *typical_p <= 1)) invalid("`typical_p` must be > 0.0 and <= 1.0");
    if (repetition_penalty && !(*repetition_penalty > 0)) invalid("`repetition_penalty` must be strictly positive");
    const bool do_sample = read_bool(p, "do_sample").value_or(false);
    // LoRAX's request alone decides the decoding: absent knobs are off, not generation_config's.
    g.do_sample = do_sample || (temperature && *temperature != 1.0) || top_k || (top_p && *top_p < 1.0) ||
                  (typical_p && *typical_p < 1.0);
    g.temperature = temperature.value_or(1.0);
    g.top_k = top_k.value_or(0);
    g.top_p = top_p.value_or(1.0);
    g.typical_p = typical_p.value_or(1.0);
    g.repetition_penalty = repetition_penalty.value_or(1.0);
    if (auto n = read_int(p, "max_new_tokens")) {
        if (*n < 1) invalid("`max_new_tokens` must be strictly positive");
        g.max_new_tokens = *n;
    }
    g.ignore_eos = read_bool(p, "ignore_eos_token").value_or(false);
    auto stop = read_stop(p, false, model.max_stop_sequences);
    if (!stop.empty()) g.stop = std::move(stop);
    g.seed = read_seed(p, "seed");
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
                "api_token"},
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

    GenerationParams& g = r.request.params;
    const double temperature = read_number(body, "temperature").value_or(1.0);
    if (temperature < 0 || temperature > 2) invalid("`temperature` must be in [0, 2]");
    const auto top_p = read_number(body, "top_p");
    if (top_p && !(*top_p > 0 && *top_p <= 1)) invalid("`top_p` must be > 0.0 and <= 1.0");
    auto top_k = read_int(body, "top_k");
    if (top_k && *top_k == -1) top_k = 0;   // vLLM's "disabled"
    if (top_k && *top_k < 0) invalid("`top_k` must be positive, or -1 or 0 to disable it");
    const auto repetition_penalty = read_number(body, "repetition_penalty");
    if (repetition_penalty && !(*repetition_penalty > 0)) invalid("`repetition_penalty` must be strictly positive");
    g.do_sample = temperature > 0;
    g.temperature = temperature > 0 ? temperature : 1.0;
    g.top_p = top_p.value_or(1.0);
    g.top_k = top_k.value_or(0);
    g.typical_p = 1.0;
    g.repetition_penalty = repetition_penalty.value_or(1.0);
    const int64_t max_tokens = read_int(body, "max_tokens").value_or(16);   // OpenAI's and vLLM's default
    if (max_tokens < 1) invalid("`max_tokens` must be strictly positive");
    g.max_new_tokens = max_tokens;
    g.ignore_eos = read_bool(body, "ignore_eos_token").value_or(read_bool(body, "ignore_eos").value_or(false));
    auto stop = read_stop(body, true, model.max_stop_sequences);
    if (!stop.empty()) g.stop = std::move(stop);
    g.seed = read_seed(body, "seed");
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

}  // namespace lorascope::cli::serve
