#include "lorascope/finish_json.h"

#include "lorascope/error.h"
#include "util/json_read.h"

namespace lorascope {

using json::Json;

const char* to_string(FinishReason reason) {
    switch (reason) {
        case FinishReason::Eos: return "eos";
        case FinishReason::Length: return "length";
        case FinishReason::Stop: return "stop";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::Error: return "error";
    }
    return "error";
}

std::optional<FinishReason> finish_reason_from_string(const std::string& name) {
    for (FinishReason r : {FinishReason::Eos, FinishReason::Length, FinishReason::Stop, FinishReason::Cancelled,
                           FinishReason::Error})
        if (name == to_string(r)) return r;
    return std::nullopt;
}

namespace {

Json alternatives_json(const std::vector<std::vector<TokenAlternative>>& per_token) {
    Json out = Json::array();
    for (const auto& token : per_token) {
        Json one = Json::array();
        for (const auto& a : token) one.push_back({{"token_id", a.token_id}, {"logprob", a.logprob}, {"text", a.text}});
        out.push_back(std::move(one));
    }
    return out;
}

Json prompt_logprobs_json(const std::vector<PromptTokenLogprob>& tokens) {
    Json out = Json::array();
    for (const auto& t : tokens)
        out.push_back({{"token_id", t.token_id}, {"text", t.text}, {"logprob", t.logprob ? Json(*t.logprob) : Json()}});
    return out;
}

}  // namespace

std::string finish_to_json(const FinishEvent& e, const FinishJsonOptions& options) {
    Json id = e.client_id;
    if (options.client_id_is_json) id = Json::parse(e.client_id, nullptr, false);
    Json line = {{"id", id},
                 {"text", e.text},
                 {"token_ids", e.token_ids},
                 {"finish_reason", to_string(e.reason)},
                 {"prompt_tokens", e.usage.prompt_tokens},
                 {"generated_tokens", e.usage.generated_tokens},
                 {"queue_ms", e.usage.queue_ms},
                 {"time_to_first_token_ms", e.usage.time_to_first_token_ms},
                 {"total_ms", e.usage.total_ms}};
    if (e.reason == FinishReason::Stop) line["stop_sequence"] = e.stop_sequence;
    if (!e.logprobs.empty()) line["logprobs"] = e.logprobs;
    if (!e.alternatives.empty()) line["alternatives"] = alternatives_json(e.alternatives);
    if (!e.prompt_logprobs.empty()) line["prompt_logprobs"] = prompt_logprobs_json(e.prompt_logprobs);
    if (!e.sequences.empty()) {
        Json sequences = Json::array();
        for (const auto& s : e.sequences) {
            Json one = {{"text", s.text}, {"token_ids", s.token_ids}};
            if (s.score) one["score"] = *s.score;
            if (!s.logprobs.empty()) one["logprobs"] = s.logprobs;
            if (!s.alternatives.empty()) one["alternatives"] = alternatives_json(s.alternatives);
            sequences.push_back(std::move(one));
        }
        line["sequences"] = std::move(sequences);
    }
    if (!e.error.empty()) line["error"] = e.error;
    // Replacement characters rather than an exception for text cut inside a UTF-8 sequence.
    return line.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// A list of numbers; absent or null: empty.
template <typename T>
std::vector<T> numbers(const json::ObjectReader& r, const char* key) {
    std::vector<T> out;
    const Json* a = r.find(key);
    if (!a) return out;
    if (!a->is_array()) r.fail_field(key, "must be an array of numbers");
    for (const Json& v : *a) {
        if (!v.is_number()) r.fail_field(key, "must be an array of numbers");
        out.push_back(v.get<T>());
    }
    return out;
}

std::vector<std::vector<TokenAlternative>> alternatives_from(const json::ObjectReader& r, const char* key) {
    std::vector<std::vector<TokenAlternative>> out;
    const Json* a = r.find(key);
    if (!a) return out;
    const char* shape = "must be a list (per token) of lists of {\"token_id\", \"logprob\", \"text\"}";
    if (!a->is_array()) r.fail_field(key, shape);
    for (const Json& token : *a) {
        if (!token.is_array()) r.fail_field(key, shape);
        std::vector<TokenAlternative> one;
        for (const Json& alt : token) {
            if (!alt.is_object()) r.fail_field(key, shape);
            const json::ObjectReader ar(alt, r.path(), std::string(key) + ".");
            one.push_back({ar.get_int("token_id", 0), static_cast<float>(ar.get_double("logprob", 0)),
                           ar.get_string("text", "")});
        }
        out.push_back(std::move(one));
    }
    return out;
}

std::vector<PromptTokenLogprob> prompt_logprobs_from(const json::ObjectReader& r) {
    std::vector<PromptTokenLogprob> out;
    const Json* a = r.find("prompt_logprobs");
    if (!a) return out;
    if (!a->is_array()) r.fail_field("prompt_logprobs", "must be a list of {\"token_id\", \"text\", \"logprob\"}");
    for (const Json& t : *a) {
        if (!t.is_object()) r.fail_field("prompt_logprobs", "must be a list of {\"token_id\", \"text\", \"logprob\"}");
        const json::ObjectReader tr(t, r.path(), "prompt_logprobs.");
        const auto lp = tr.get_double("logprob");
        out.push_back({tr.get_int("token_id", 0), tr.get_string("text", ""),
                       lp ? std::optional<float>(static_cast<float>(*lp)) : std::nullopt});
    }
    return out;
}

}  // namespace

FinishEvent finish_from_json(const std::string& line, const FinishJsonOptions& options, const std::string& source) {
    const Json root = json::parse(line, source);
    if (!root.is_object()) throw Error(ErrorKind::Format, source, "a finish line must be a JSON object");
    const json::ObjectReader r(root, source);
    FinishEvent e;
    const auto id = root.find("id");
    const Json id_value = id == root.end() ? Json() : *id;   // absent: null, as the CLI writes it
    if (options.client_id_is_json) e.client_id = id_value.dump();
    else if (id_value.is_string()) e.client_id = id_value.get<std::string>();
    else if (!id_value.is_null()) e.client_id = id_value.dump();
    const std::string reason = r.get_string("finish_reason", "error");
    const auto parsed = finish_reason_from_string(reason);
    if (!parsed) throw Error(ErrorKind::Format, source, "unknown finish_reason \"" + reason + "\"");
    e.reason = *parsed;
    e.text = r.get_string("text", "");
    e.stop_sequence = r.get_string("stop_sequence", "");
    e.error = r.get_string("error", "");
    e.token_ids = numbers<int64_t>(r, "token_ids");
    e.logprobs = numbers<float>(r, "logprobs");
    e.alternatives = alternatives_from(r, "alternatives");
    e.prompt_logprobs = prompt_logprobs_from(r);
    e.usage.prompt_tokens = r.get_int("prompt_tokens", 0);
    e.usage.generated_tokens = r.get_int("generated_tokens", 0);
    e.usage.queue_ms = r.get_double("queue_ms", 0);
    e.usage.time_to_first_token_ms = r.get_double("time_to_first_token_ms", 0);
    e.usage.total_ms = r.get_double("total_ms", 0);
    if (const Json* seqs = r.find("sequences")) {
        if (!seqs->is_array()) r.fail_field("sequences", "must be an array of objects");
        for (const Json& s : *seqs) {
            if (!s.is_object()) r.fail_field("sequences", "must be an array of objects");
            const json::ObjectReader sr(s, source, "sequences.");
            ReturnedSequence one;
            one.text = sr.get_string("text", "");
            one.token_ids = numbers<int64_t>(sr, "token_ids");
            one.score = sr.get_double("score");
            one.logprobs = numbers<float>(sr, "logprobs");
            one.alternatives = alternatives_from(sr, "alternatives");
            e.sequences.push_back(std::move(one));
        }
    }
    return e;
}

}  // namespace lorascope
