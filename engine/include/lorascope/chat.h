// Conversations, and the Jinja chat templates that lay them out for an instruct model, rendered
// exactly as Hugging Face transformers' tokenizer.apply_chat_template(tokenize=False) renders them
// (jinja2 in an immutable sandbox with trim_blocks and lstrip_blocks, transformers' tojson,
// raise_exception and strftime_now). Torch-free (lorascope_core), so that the window, the CLI and
// the HTTP server can render the prompt a model really sees without loading the model.
//
// The template language is the subset published chat templates use; a template using anything
// else fails to load with an Error naming the construct, the file and the line, so that a template
// is either rendered as transformers renders it or refused, never rendered differently. Rendering
// is bounded (ChatTemplateLimits): no template or input makes it run long or grow large.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lorascope {

// One turn. Templates see it as the dict {"role": ..., "content": ..., <extra fields>} in that order.
struct ChatMessage {
    std::string role;                    // system, user, assistant, tool (templates may take others)
    std::optional<std::string> content;  // nullopt: null (an assistant turn that only calls tools)
    // The message's other fields as a JSON object, in the order given: tool_calls, tool_call_id,
    // name, reasoning_content, ... Empty: none.
    std::string extra_json;
};

struct Conversation {
    std::vector<ChatMessage> messages;
    // A JSON array of tool schemas as transformers takes them ({"type": "function", "function":
    // {...}}). Empty: no tools (the template sees tools = none).
    std::string tools_json;
    // More template variables, a JSON object: {"enable_thinking": false}, {"documents": [...]},
    // {"date_string": "..."}. Empty: none. messages, tools and add_generation_prompt cannot be set here.
    std::string variables_json;
};

// Reads a conversation from JSON text: messages is an array of {"role": str, "content": str | null,
// ...}; tools (may be empty) an array. `origin` names the input in errors (Error(InvalidArgument)).
Conversation parse_conversation_json(const std::string& messages_json, const std::string& tools_json,
                                     const std::string& origin);
// The messages as a JSON array, in the form parse_conversation_json reads.
std::string messages_to_json(const std::vector<ChatMessage>& messages);

// What a render may cost at most. Reaching a limit ends the render with Error(Unsafe).
struct ChatTemplateLimits {
    int64_t max_source_bytes = 1 << 20;        // the template itself
    // Nesting of statements and expressions in the template, of lists and dicts in the values;
    // evaluation with macro calls may nest up to four times this.
    int max_depth = 128;
    int64_t max_output_bytes = 8 << 20;        // the rendered text, and any one string or list built
    int64_t max_loop_iterations = 1'000'000;   // all loops of one render together
    // Evaluation steps of one render: one per expression and statement, one per item or 16 bytes
    // that an operation (a filter, a join, a comparison of lists) goes through.
    int64_t max_steps = 5'000'000;
};

// strftime_now's clock: a local date and time.
struct ChatClock {
    int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};

struct ChatRenderOptions {
    bool add_generation_prompt = true;
    // The tokenizer's special tokens by attribute name (bos_token, eos_token, unk_token, pad_token,
    // sep_token, cls_token, mask_token), as transformers passes special_tokens_map: an absent one is
    // undefined in the template.
    std::map<std::string, std::string> special_tokens;
    std::vector<std::string> additional_special_tokens;
    std::optional<ChatClock> now;  // nullopt: the local time when rendering
    ChatTemplateLimits limits;
};

namespace chat {
struct Program;
}

class ChatTemplate {
public:
    // Parses a template; Error(Format) for a syntax error, Error(Unsupported) for a construct
    // outside the subset, naming `origin` (the file it came from) and the line.
    static ChatTemplate parse(const std::string& source, const std::string& origin,
                              const ChatTemplateLimits& limits = {});

    // Renders a conversation. A template's own refusal (raise_exception) is Error(InvalidArgument)
    // whose message() is the template's message exactly; other failures name the line.
    // Thread-safe: a parsed template renders on any number of threads at once.
    std::string render(const Conversation& conversation, const ChatRenderOptions& options) const;

    const std::string& origin() const;

private:
    std::shared_ptr<const chat::Program> program_;
};

// A model directory's chat template(s) and special tokens, as transformers' tokenizer holds them:
// tokenizer_config.json's "chat_template" (a string, or a list of {"name", "template"}), else a
// chat_template.jinja file; special tokens from tokenizer_config.json and special_tokens_map.json.
class ModelChatTemplates {
public:
    // Throws Error(NotFound) when the directory has no chat template, Error(Format) for a malformed
    // file. Templates that fail to parse are reported when selected (render / select), so that one
    // broken named template does not hide the others.
    static ModelChatTemplates load(const std::string& model_dir);

    // transformers' get_chat_template: a single template; or, among named ones, "tool_use" when the
    // conversation has tools and there is one, else "default"; or the one named `name` if given.
    const ChatTemplate& select(bool has_tools, const std::string& name = {}) const;
    // Renders with the model's special tokens (options.special_tokens given here win).
    std::string render(const Conversation& conversation, ChatRenderOptions options, const std::string& name = {}) const;

    const std::string& origin() const { return origin_; }    // the file the templates came from
    std::vector<std::string> names() const;                  // "default" for a single template
    const std::map<std::string, std::string>& special_tokens() const { return special_tokens_; }
    const std::vector<std::string>& additional_special_tokens() const { return additional_special_tokens_; }

private:
    struct Entry;
    std::string origin_;
    bool named_ = false;
    std::vector<std::shared_ptr<const Entry>> entries_;
    std::map<std::string, std::string> special_tokens_;
    std::vector<std::string> additional_special_tokens_;
};

}  // namespace lorascope
