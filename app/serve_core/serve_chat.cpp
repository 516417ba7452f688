#include "serve_chat.h"

#include <algorithm>

#include "lorascope/error.h"
#include "lorascope/json_input.h"

namespace lorascope::serve {

using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& message) { throw HttpError(422, "validation", message); }

// The fields of OpenAI's chat request this server reads; the chat-only ones are taken out before
// the rest goes through /v1/completions' parser.
const std::vector<std::string> kChatOnly = {"messages", "logprobs", "top_logprobs", "tools", "tool_choice",
                                            "chat_template_kwargs", "return_tokens_as_token_ids",
                                            "max_completion_tokens", "response_format"};
const std::vector<std::string> kShared = {"model", "max_tokens", "temperature", "top_p", "n", "stream",
                                          "stream_options", "stop", "presence_penalty", "frequency_penalty",
                                          "logit_bias", "user", "seed", "repetition_penalty", "top_k",
                                          "ignore_eos_token", "ignore_eos", "adapter_source", "api_token"};

bool listed(const std::vector<std::string>& names, const std::string& key) {
    return std::find(names.begin(), names.end(), key) != names.end();
}

bool present(const json& o, const char* key) { return o.contains(key) && !o.at(key).is_null(); }

// OpenAI's content parts: text parts joined by newlines, as vLLM joins them; other parts (images,
// audio) are refused, since the served models read text only.
json content_of(const json& content, size_t index) {
    if (!content.is_array()) return content;
    std::string text;
    for (const auto& part : content) {
        if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") || !part["text"].is_string())
            invalid("`messages[" + std::to_string(index) + "].content` may only hold text parts ({\"type\": \"text\", "
                    "\"text\": ...}): the served model reads text");
        text += (text.empty() ? "" : "\n") + part["text"].get<std::string>();
    }
    return text;
}

Conversation conversation_of(const json& body) {
    const json* messages = body.contains("messages") ? &body.at("messages") : nullptr;
    if (!messages || !messages->is_array() || messages->empty())
        invalid("`messages` is required: a non-empty list of {\"role\", \"content\"}");
    json normal = json::array();
    for (size_t i = 0; i < messages->size(); ++i) {
        json m = (*messages)[i];
        if (!m.is_object()) invalid("`messages[" + std::to_string(i) + "]` must be an object");
        if (m.contains("content")) m["content"] = content_of(m["content"], i);
        normal.push_back(std::move(m));
    }
    std::string tools;
    if (present(body, "tools")) {
        if (!body["tools"].is_array()) invalid("`tools` must be a list of tool schemas");
        tools = body["tools"].dump();
    }
    try {
        Conversation c = parse_conversation_json(normal.dump(), tools, "`messages`");
        if (present(body, "chat_template_kwargs")) {
            if (!body["chat_template_kwargs"].is_object()) invalid("`chat_template_kwargs` must be an object");
            c.variables_json = body["chat_template_kwargs"].dump();
        }
        return c;
    } catch (const Error& e) {
        invalid(e.message());
    }
}

// The chat-only knobs that have no meaning here unless they say "nothing special".
void refuse_chat_extras(const json& body) {
    if (present(body, "tool_choice") && body["tool_choice"] != "none" && body["tool_choice"] != "auto")
        invalid("`tool_choice` can only be \"none\" or \"auto\": lorascope serve passes `tools` to the chat "
                "template but does not force or parse tool calls");
    if (present(body, "response_format") && body["response_format"] != json{{"type", "text"}})
        invalid("`response_format` other than {\"type\": \"text\"} is not supported: no constrained decoding");
}

json token_entry(const ParsedRequest& r, int64_t id, const std::string& text, double logprob) {
    json bytes = json::array();
    for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
    return {{"token", r.tokens_as_ids ? "token_id:" + std::to_string(id) : text}, {"logprob", logprob}, {"bytes", bytes}};
}

// One generated token in OpenAI's chat logprobs: the chosen token and its alternatives.
json logprob_content(const ParsedRequest& r, const TokenEvent& t) {
    json entry = token_entry(r, t.token_id, t.text_delta, t.logprob);
    json top = json::array();
    for (const auto& a : t.alternatives)
        if (static_cast<int64_t>(top.size()) < r.top_logprobs) top.push_back(token_entry(r, a.token_id, a.text, a.logprob));
    entry["top_logprobs"] = top;
    return entry;
}

json usage_of(const FinishEvent& f) {
    const int64_t p = f.usage.prompt_tokens, g = f.usage.generated_tokens;
    return {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}};
}

}  // namespace

ParsedRequest parse_openai_chat(const json& body, const ServedModel& model) {
    for (const auto& item : body.items())
        if (!listed(kChatOnly, item.key()) && !listed(kShared, item.key()))
            invalid("unknown field `" + json_key_excerpt(item.key()) + "` for /v1/chat/completions");
    Conversation conversation = conversation_of(body);
    refuse_chat_extras(body);
    bool logprobs = false;
    if (present(body, "logprobs")) {
        if (!body["logprobs"].is_boolean()) invalid("`logprobs` must be true or false");
        logprobs = body["logprobs"].get<bool>();
    }
    int64_t top = 0;
    if (present(body, "top_logprobs")) {
        if (!body["top_logprobs"].is_number_integer()) invalid("`top_logprobs` must be an integer");
        top = body["top_logprobs"].get<int64_t>();
        if (top < 0 || top > kMaxTopAlternatives) invalid("`top_logprobs` must be in [0, 20]");
        if (top > 0 && !logprobs) invalid("`top_logprobs` needs `logprobs` true");
    }
    bool as_ids = false;
    if (present(body, "return_tokens_as_token_ids")) {
        if (!body["return_tokens_as_token_ids"].is_boolean()) invalid("`return_tokens_as_token_ids` must be true or false");
        as_ids = body["return_tokens_as_token_ids"].get<bool>();
    }

    // The sampling fields are /v1/completions': one parser, one set of ranges and defaults.
    json completion = json::object();
    for (const auto& item : body.items())
        if (listed(kShared, item.key())) completion[item.key()] = item.value();
    if (!present(completion, "max_tokens") && present(body, "max_completion_tokens"))
        completion["max_tokens"] = body["max_completion_tokens"];
    completion["prompt"] = "(the conversation)";   // replaced by the rendered conversation
    ParsedRequest r = parse_openai_completion(completion, model);
    r.conversation = std::move(conversation);
    r.inputs.clear();
    r.request.prompt.reset();
    r.chat = true;
    r.openai_logprobs = logprobs;
    r.top_logprobs = top;
    r.tokens_as_ids = as_ids;
    if (top > 0) r.request.params.top_alternatives = top;
    return r;
}

Conversation lorax_chat_inputs(const std::string& inputs) {
    json messages;
    try {
        messages = parse_json_object("{\"messages\": " + inputs + "}").at("messages");
    } catch (const HttpError& e) {
        invalid("with `apply_chat_template`, `inputs` must be the messages as a JSON list: " + std::string(e.what()));
    }
    return conversation_of(json{{"messages", messages}});
}

void render_chat(ParsedRequest& r, const ModelChatTemplates* templates) {
    if (!r.conversation) return;
    if (!templates)
        throw HttpError(400, "validation",
                        "the served model has no chat template (no \"chat_template\" in its tokenizer_config.json, no "
                        "chat_template.jinja), so it cannot take a conversation: send a prompt to /v1/completions");
    ChatRenderOptions options;
    options.add_generation_prompt = true;
    try {
        r.inputs = templates->render(*r.conversation, options);
    } catch (const Error& e) {
        invalid("the model's chat template refused the conversation: " + client_error_text(e.message()));
    }
    if (r.inputs.empty()) invalid("the model's chat template rendered an empty prompt for this conversation");
    r.request.prompt = r.inputs;
    r.add_special_tokens = false;   // as apply_chat_template(tokenize=True): the template wrote them
}

Reply openai_chat_whole_reply(const ParsedRequest& r, const FinishEvent& f, const std::vector<TokenEvent>& tokens,
                              const std::string& completion_id, int64_t created) {
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) return error_reply(finish_error(f));
    json logprobs = nullptr;
    if (r.openai_logprobs) {
        json content = json::array();
        for (const auto& t : tokens) content.push_back(logprob_content(r, t));
        logprobs = {{"content", content}};
    }
    json choice = {{"index", 0},
                   {"message", {{"role", "assistant"}, {"content", f.text}}},
                   {"logprobs", logprobs},
                   {"finish_reason", openai_finish_reason(f.reason)},
                   {"stop_reason", openai_stop_reason(f)}};
    return json_reply(200, {{"id", completion_id},
                            {"object", "chat.completion"},
                            {"created", created},
                            {"model", r.model},
                            {"choices", json::array({choice})},
                            {"usage", usage_of(f)}});
}

json openai_chat_chunk(const ParsedRequest& r, const std::string& completion_id, int64_t created,
                       const std::string& text, const TokenEvent* token, const FinishEvent* finish, bool role_only) {
    json delta = json::object();
    if (role_only) delta = {{"role", "assistant"}, {"content", ""}};
    else if (!finish || !text.empty()) delta["content"] = text;
    json choice = {{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (r.openai_logprobs && token) choice["logprobs"] = {{"content", json::array({logprob_content(r, *token)})}};
    if (finish) {
        choice["finish_reason"] = openai_finish_reason(finish->reason);
        choice["stop_reason"] = openai_stop_reason(*finish);
    }
    json chunk = {{"id", completion_id}, {"object", "chat.completion.chunk"}, {"created", created},
                  {"model", r.model}, {"choices", json::array({choice})}};
    if (finish) chunk["usage"] = usage_of(*finish);
    return chunk;
}

}  // namespace lorascope::serve
