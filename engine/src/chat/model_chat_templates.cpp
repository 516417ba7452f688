// lorascope/chat.h's ModelChatTemplates: a model directory's chat templates and special tokens,
// chosen as transformers' get_chat_template chooses.
#include "lorascope/chat.h"

#include "lorascope/error.h"
#include "tokenizer/hf_tokenizer_config.h"
#include "util/json_read.h"
#include "util/paths.h"

#include <algorithm>
#include <optional>

namespace lorascope {

struct ModelChatTemplates::Entry {
    std::string name;
    std::optional<ChatTemplate> parsed;
    std::string error, error_path;  // why it did not parse
    ErrorKind error_kind = ErrorKind::Format;
};

ModelChatTemplates ModelChatTemplates::load(const std::string& model_dir) {
    tokenizer::HfTokenizerConfig config = tokenizer::read_hf_tokenizer_config(model_dir);
    tokenizer::apply_family_defaults(config);
    ModelChatTemplates out;
    out.origin_ = model_dir + "/tokenizer_config.json";
    if (!config.chat_template_error.empty()) throw Error(ErrorKind::Format, out.origin_, config.chat_template_error);
    std::vector<std::pair<std::string, std::string>> sources = config.chat_templates;
    out.named_ = config.chat_templates_named;
    // Newer transformers save the template beside the config instead.
    const std::string jinja_path = model_dir + "/chat_template.jinja";
    if (sources.empty() && paths::is_regular_file(jinja_path)) {
        out.origin_ = jinja_path;
        sources.emplace_back("", json::read_text_file(jinja_path));
        out.named_ = false;
    }
    if (sources.empty())
        throw Error(ErrorKind::NotFound, model_dir + "/tokenizer_config.json", "the model has no chat template (no \"chat_template\")");
    for (const auto& [name, source] : sources) {
        auto entry = std::make_shared<Entry>();
        entry->name = name.empty() ? "default" : name;
        const std::string origin = out.origin_ + (out.named_ ? " (template '" + name + "')" : "");
        try {
            entry->parsed = ChatTemplate::parse(source, origin);
        } catch (const Error& e) {
            entry->error = e.message();
            entry->error_path = e.path();
            entry->error_kind = e.kind();
        }
        out.entries_.push_back(std::move(entry));
    }
    for (const auto& [key, token] : config.special_tokens) out.special_tokens_[key] = token.content;
    for (const auto& token : config.additional_special_tokens) out.additional_special_tokens_.push_back(token.content);
    return out;
}

const ChatTemplate& ModelChatTemplates::select(bool has_tools, const std::string& name) const {
    auto find = [&](const std::string& n) -> const Entry* {
        for (const auto& e : entries_)
            if (e->name == n) return e.get();
        return nullptr;
    };
    const Entry* chosen = nullptr;
    if (!named_) {
        if (!name.empty() && name != "default") throw Error(ErrorKind::NotFound, origin_, "the model has no chat template named '" + name + "'");
        chosen = entries_.front().get();
    } else if (!name.empty()) {
        chosen = find(name);
        if (!chosen) throw Error(ErrorKind::NotFound, origin_, "the model has no chat template named '" + name + "'");
    } else {
        chosen = has_tools ? find("tool_use") : nullptr;
        if (!chosen) chosen = find("default");
        if (!chosen) {
            std::string names;
            for (const auto& n : this->names()) names += (names.empty() ? "" : ", ") + n;
            throw Error(ErrorKind::NotFound, origin_, "the model has several chat templates and none is named 'default' (" + names + ")");
        }
    }
    if (!chosen->parsed) throw Error(chosen->error_kind, chosen->error_path, chosen->error);
    return *chosen->parsed;
}

std::string ModelChatTemplates::render(const Conversation& conversation, ChatRenderOptions options, const std::string& name) const {
    for (const auto& [key, token] : special_tokens_) options.special_tokens.emplace(key, token);
    if (options.additional_special_tokens.empty()) options.additional_special_tokens = additional_special_tokens_;
    return select(!conversation.tools_json.empty(), name).render(conversation, options);
}

std::vector<std::string> ModelChatTemplates::names() const {
    std::vector<std::string> out;
    for (const auto& e : entries_) out.push_back(e->name);
    return out;
}

}  // namespace lorascope
