#include "request_json.h"

#include "lorascope/chat.h"
#include "lorascope/error.h"
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

}  // namespace

Request parse_request(const json& r, const std::string& source, std::string_view line_text) {
    for (const auto& item : r.items()) {
        const auto& k = item.key();
        if (k != "id" && k != "prompt" && k != "input_ids" && k != "params" && k != "adapter" && k != "messages" &&
            k != "tools" && k != "chat_template_kwargs")
            throw Error(ErrorKind::InvalidArgument, source, "unknown request field \"" + k + "\"");
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
    if (r.contains("params")) {
        if (!r["params"].is_object()) throw Error(ErrorKind::InvalidArgument, source, "\"params\" must be an object");
        request.params = generation_params_from_json(r["params"], source);
    }
    return request;
}

}  // namespace lorascope::cli
