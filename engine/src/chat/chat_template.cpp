// lorascope/chat.h: parsing a template once, and rendering conversations with it as transformers'
// apply_chat_template does (the variables it passes: messages, tools, documents,
// add_generation_prompt, the special tokens, and the caller's extra variables).
#include "lorascope/chat.h"

#include "chat/evaluator.h"
#include "chat/json_value.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "chat/py_text.h"
#include "lorascope/error.h"

namespace lorascope {

namespace chat {

struct Program {
    std::string origin;
    ast::Body body;
};

}  // namespace chat

namespace {

void check_utf8(const std::string& text, const std::string& origin, const std::string& what) {
    if (const size_t at = chat::invalid_utf8_at(text); at != std::string::npos)
        throw Error(ErrorKind::InvalidArgument, origin, what + " is not valid UTF-8 (byte " + std::to_string(at) + ")");
}

// {"role": ..., "content": ..., <extra fields>}, as the template sees the message.
chat::Value message_value(const ChatMessage& m, size_t index, const ChatTemplateLimits& limits) {
    const std::string what = "message " + std::to_string(index);
    check_utf8(m.role, "conversation", what + "'s role");
    if (m.content) check_utf8(*m.content, "conversation", what + "'s content");
    std::vector<std::pair<chat::Value, chat::Value>> fields;
    fields.emplace_back(chat::Value::string("role"), chat::Value::string(m.role));
    fields.emplace_back(chat::Value::string("content"), m.content ? chat::Value::string(*m.content) : chat::Value::none());
    if (!m.extra_json.empty()) {
        const auto extra = chat::parse_json_text(m.extra_json, "conversation", what + "'s extra fields");
        if (!extra.is_object()) throw Error(ErrorKind::InvalidArgument, "conversation", what + "'s extra fields must be a JSON object");
        for (const auto& [key, value] : extra.items()) {
            if (key == "role" || key == "content")
                throw Error(ErrorKind::InvalidArgument, "conversation", what + "'s extra fields repeat \"" + key + "\"");
            fields.emplace_back(chat::Value::string(key), chat::json_to_value(value, limits.max_depth - 1, "conversation", what));
        }
    }
    return chat::Value::dict(std::move(fields));
}

std::vector<std::pair<std::string, chat::Value>> render_context(const Conversation& c, const ChatRenderOptions& o) {
    std::vector<std::pair<std::string, chat::Value>> context;
    auto set = [&](const std::string& name, chat::Value value) {
        for (auto& [n, v] : context)
            if (n == name) {
                v = std::move(value);
                return;
            }
        context.emplace_back(name, std::move(value));
    };
    // transformers: render(messages=, tools=, documents=, add_generation_prompt=, **special_tokens_map, **kwargs).
    for (const auto& [name, token] : o.special_tokens) set(name, chat::Value::string(token));
    if (!o.additional_special_tokens.empty()) {
        std::vector<chat::Value> tokens;
        for (const auto& t : o.additional_special_tokens) tokens.push_back(chat::Value::string(t));
        set("additional_special_tokens", chat::Value::sequence(std::move(tokens)));
    }
    set("documents", chat::Value::none());
    if (!c.variables_json.empty()) {
        const auto vars = chat::parse_json_text(c.variables_json, "conversation", "variables");
        if (!vars.is_object()) throw Error(ErrorKind::InvalidArgument, "conversation", "variables must be a JSON object");
        for (const auto& [name, value] : vars.items()) {
            if (name == "messages" || name == "tools" || name == "add_generation_prompt")
                throw Error(ErrorKind::InvalidArgument, "conversation", "variables cannot set \"" + name + "\" (the conversation does)");
            set(name, chat::json_to_value(value, o.limits.max_depth, "conversation", "variable " + name));
        }
    }
    std::vector<chat::Value> messages;
    for (size_t i = 0; i < c.messages.size(); ++i) messages.push_back(message_value(c.messages[i], i, o.limits));
    set("messages", chat::Value::sequence(std::move(messages)));
    set("tools", c.tools_json.empty() ? chat::Value::none()
                                      : chat::json_to_value(chat::parse_json_text(c.tools_json, "conversation", "tools"),
                                                            o.limits.max_depth, "conversation", "tools"));
    set("add_generation_prompt", chat::Value::boolean(o.add_generation_prompt));
    return context;
}

}  // namespace

ChatTemplate ChatTemplate::parse(const std::string& source, const std::string& origin, const ChatTemplateLimits& limits) {
    if (static_cast<int64_t>(source.size()) > limits.max_source_bytes)
        throw Error(ErrorKind::Unsafe, origin, "the chat template is " + std::to_string(source.size()) + " bytes, over the limit of " +
                                                   std::to_string(limits.max_source_bytes));
    if (const size_t at = chat::invalid_utf8_at(source); at != std::string::npos)
        throw Error(ErrorKind::Format, origin, "the chat template is not valid UTF-8 (byte " + std::to_string(at) + ")");
    auto program = std::make_shared<chat::Program>();
    program->origin = origin;
    program->body = chat::parse_template(chat::tokenize(source, origin), origin, limits.max_depth);
    ChatTemplate t;
    t.program_ = std::move(program);
    return t;
}

std::string ChatTemplate::render(const Conversation& conversation, const ChatRenderOptions& options) const {
    chat::Evaluator evaluator(program_->body, program_->origin, options.limits, render_context(conversation, options), options.now);
    return evaluator.render();
}

const std::string& ChatTemplate::origin() const { return program_->origin; }

Conversation parse_conversation_json(const std::string& messages_json, const std::string& tools_json, const std::string& origin) {
    const auto messages = chat::parse_json_text(messages_json, origin, "messages");
    if (!messages.is_array()) throw Error(ErrorKind::InvalidArgument, origin, "messages must be a JSON array");
    Conversation c;
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        const std::string what = "message " + std::to_string(i);
        if (!m.is_object()) throw Error(ErrorKind::InvalidArgument, origin, what + " must be a JSON object");
        if (!m.contains("role") || !m["role"].is_string()) throw Error(ErrorKind::InvalidArgument, origin, what + " needs a string \"role\"");
        if (!m.contains("content")) throw Error(ErrorKind::InvalidArgument, origin, what + " needs \"content\" (a string, or null)");
        if (!m["content"].is_string() && !m["content"].is_null())
            throw Error(ErrorKind::InvalidArgument, origin, what + "'s \"content\" must be a string or null");
        ChatMessage message;
        message.role = m["role"].get<std::string>();
        if (m["content"].is_string()) message.content = m["content"].get<std::string>();
        chat::OrderedJson extra = chat::OrderedJson::object();
        for (const auto& [key, value] : m.items())
            if (key != "role" && key != "content") extra[key] = value;
        if (!extra.empty()) message.extra_json = extra.dump();
        c.messages.push_back(std::move(message));
    }
    if (!tools_json.empty()) {
        const auto tools = chat::parse_json_text(tools_json, origin, "tools");
        if (!tools.is_array()) throw Error(ErrorKind::InvalidArgument, origin, "tools must be a JSON array");
        c.tools_json = tools_json;
    }
    return c;
}

std::string messages_to_json(const std::vector<ChatMessage>& messages) {
    chat::OrderedJson out = chat::OrderedJson::array();
    for (const auto& m : messages) {
        chat::OrderedJson j = chat::OrderedJson::object();
        j["role"] = m.role;
        j["content"] = m.content ? chat::OrderedJson(*m.content) : chat::OrderedJson(nullptr);
        if (!m.extra_json.empty()) {
            const auto extra = chat::parse_json_text(m.extra_json, "conversation", "extra fields");
            for (const auto& [key, value] : extra.items()) j[key] = value;
        }
        out.push_back(std::move(j));
    }
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lorascope
