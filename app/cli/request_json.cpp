#include "request_json.h"

#include <algorithm>
#include <iterator>

#include "lorascope/adapter.h"
#include "lorascope/chat.h"
#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "lorascope/params_json.h"

namespace lorascope::cli {

using nlohmann::json;

namespace {

// "messages" (+ "tools", "chat_template_kwargs") as a conversation, read from the line's text when
// given so that objects keep their key order.
Conversation read_conversation(const json& r, const std::string& source, std::string_view line_text) {
    if (!r["messages"].is_array()) throw Error(ErrorKind::InvalidArgument, source, "\"messages\" must be a list of {\"role\", \"content\"}");
    nlohmann::ordered_json ordered;
    if (!line_text.empty()) ordered = nlohmann::ordered_json::parse(line_text, nullptr, /*allow_exceptions=*/false);
    auto text_of = [&](const char* key) { return ordered.is_object() && ordered.contains(key) ? ordered[key].dump() : r[key].dump(); };
    const bool has_tools = r.contains("tools") && !r["tools"].is_null();
    Conversation c = parse_conversation_json(text_of("messages"), has_tools ? text_of("tools") : "", source);
    if (r.contains("chat_template_kwargs")) {
        if (!r["chat_template_kwargs"].is_object())
            throw Error(ErrorKind::InvalidArgument, source, "\"chat_template_kwargs\" must be an object");
        c.variables_json = text_of("chat_template_kwargs");
    }
    return c;
}

std::vector<int64_t> integer_list(const json& v, const std::string& source, const char* field) {
    std::vector<int64_t> out;
    if (!v.is_array()) throw Error(ErrorKind::InvalidArgument, source, std::string("\"") + field + "\" must be a list of integers");
    for (const auto& x : v) {
        if (!x.is_number_integer())
            throw Error(ErrorKind::InvalidArgument, source, std::string("\"") + field + "\" must be a list of integers");
        out.push_back(x.get<int64_t>());
    }
    return out;
}

// The fields of issue 32: a merge of adapters, the target an encoder-decoder model scores, and the
// tokens forced at the start of its decoder (a fork).
void parse_inspection_fields(const json& r, const std::string& source, Request& request) {
    if (r.contains("merged_adapters") && !r["merged_adapters"].is_null()) {
        if (!r["merged_adapters"].is_object())
            throw Error(ErrorKind::InvalidArgument, source, "\"merged_adapters\" must be an object");
        if (!request.adapter.empty())
            throw Error(ErrorKind::InvalidArgument, source, "give \"adapter\" or \"merged_adapters\", not both");
        request.merge = parse_adapter_merge(r["merged_adapters"].dump(), source);
    }
    if (r.contains("target") && r.contains("target_ids"))
        throw Error(ErrorKind::InvalidArgument, source, "give at most one of \"target\" or \"target_ids\"");
    if (r.contains("target")) {
        if (!r["target"].is_string()) throw Error(ErrorKind::InvalidArgument, source, "\"target\" must be a string");
        request.target = r["target"].get<std::string>();
    }
    if (r.contains("target_ids")) request.target_ids = integer_list(r["target_ids"], source, "target_ids");
    if (r.contains("decoder_prefix_ids"))
        request.decoder_prefix_ids = integer_list(r["decoder_prefix_ids"], source, "decoder_prefix_ids");
}

}  // namespace

std::optional<std::string> local_adapter_path(const json& r, const std::string& source) {
    if (!r.contains("adapter_source") || r["adapter_source"].is_null()) return std::nullopt;
    if (!r["adapter_source"].is_string())
        throw Error(ErrorKind::InvalidArgument, source, "\"adapter_source\" must be a string");
    const std::string kind = r["adapter_source"].get<std::string>();
    if (kind == "registered") return std::nullopt;
    if (kind != "local")
        throw Error(ErrorKind::InvalidArgument, source,
                    "adapter_source \"" + kind + "\" is not supported (adapters are never downloaded): use \"local\" for "
                    "a directory under the allowed adapter directory, or \"registered\" (the default) for a loaded adapter");
    if (!r.contains("adapter") || !r["adapter"].is_string() || r["adapter"].get<std::string>().empty())
        throw Error(ErrorKind::InvalidArgument, source, "adapter_source \"local\" needs \"adapter\": the adapter's path");
    return r["adapter"].get<std::string>();
}

Request parse_request(const json& r, const std::string& source, std::string_view line_text) {
    static const char* const known[] = {"id", "prompt", "input_ids", "params", "adapter", "messages", "tools",
                                        "chat_template_kwargs", "merged_adapters", "adapter_source", "target",
                                        "target_ids", "decoder_prefix_ids"};
    for (const auto& item : r.items()) {
        const auto& k = item.key();
        if (std::find(std::begin(known), std::end(known), k) == std::end(known))
            throw Error(ErrorKind::InvalidArgument, source, "unknown request field " + json_excerpt(json(k)));
    }
    if (int(r.contains("prompt")) + int(r.contains("input_ids")) + int(r.contains("messages")) != 1)
        throw Error(ErrorKind::InvalidArgument, source, "give exactly one of \"prompt\", \"input_ids\" or \"messages\"");
    if (!r.contains("messages") && (r.contains("tools") || r.contains("chat_template_kwargs")))
        throw Error(ErrorKind::InvalidArgument, source, "\"tools\" and \"chat_template_kwargs\" go with \"messages\"");
    Request request;
    if (r.contains("messages")) {
        request.conversation = read_conversation(r, source, line_text);
    } else if (r.contains("prompt")) {
        if (!r["prompt"].is_string()) throw Error(ErrorKind::InvalidArgument, source, "\"prompt\" must be a string");
        request.prompt = r["prompt"].get<std::string>();
    } else {
        if (!r["input_ids"].is_array()) throw Error(ErrorKind::InvalidArgument, source, "\"input_ids\" must be a list of integers");
        for (const auto& v : r["input_ids"]) {
            if (!v.is_number_integer())
                throw Error(ErrorKind::InvalidArgument, source, "\"input_ids\" must be a list of integers");
            request.input_ids.push_back(v.get<int64_t>());
        }
    }
    if (r.contains("adapter")) {
        if (!r["adapter"].is_string() && !r["adapter"].is_null())
            throw Error(ErrorKind::InvalidArgument, source, "\"adapter\" must be a string");
        if (r["adapter"].is_string()) request.adapter = r["adapter"].get<std::string>();
    }
    parse_inspection_fields(r, source, request);
    if (r.contains("params")) {
        if (!r["params"].is_object()) throw Error(ErrorKind::InvalidArgument, source, "\"params\" must be an object");
        request.params = generation_params_from_json(r["params"], source);
    }
    return request;
}

}  // namespace lorascope::cli
