// lorascope-cli chat-template: renders a conversation with a model's chat template (or a template
// file) and prints the prompt the model really sees, byte for byte; with --json also its token
// ids, tokenized as transformers' apply_chat_template(tokenize=True) does (no special tokens added:
// the template writes them).
#include "args.h"
#include "commands.h"
#include "jsonl_io.h"
#include "lorascope/chat.h"
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace lorascope::cli {

namespace {

const char* const kUsage =
    "usage: lorascope-cli chat-template (--model DIR | --template FILE) [--messages FILE|-] [--tools FILE]\n"
    "         [--variables JSON] [--name NAME] [--no-generation-prompt] [--special KEY=VALUE]... [--now TIME] [--json]\n"
    "  --model DIR       the model's chat template (tokenizer_config.json) and special tokens\n"
    "  --template FILE   a Jinja chat template file instead (give its special tokens with --special)\n"
    "  --messages FILE   a JSON array of {\"role\", \"content\", ...} messages, or {\"messages\": [...], \"tools\": [...]}\n"
    "                    (default: standard input)\n"
    "  --tools FILE      a JSON array of tool schemas\n"
    "  --variables JSON  more template variables, e.g. '{\"enable_thinking\": false}'\n"
    "  --name NAME       one of the model's named templates (default: tool_use with tools, else default)\n"
    "  --no-generation-prompt  render without the assistant turn's opening (add_generation_prompt=false)\n"
    "  --special KEY=VALUE     a special token the template sees, e.g. bos_token='<s>'\n"
    "  --now TIME        strftime_now's clock, YYYY-MM-DDTHH:MM:SS (default: the local time)\n"
    "  --json            print {\"prompt\", \"template\", \"ids\", \"tokens\"} (ids with --model's tokenizer)\n"
    "Prints the rendered prompt as it is, without adding a newline.\n";

std::string read_all(const std::string& path) {
    if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::NotFound, path, "cannot open file");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

ChatClock parse_clock(const std::string& text) {
    ChatClock c;
    char sep = 0;
    if (std::sscanf(text.c_str(), "%d-%d-%d%c%d:%d:%d", &c.year, &c.month, &c.day, &sep, &c.hour, &c.minute, &c.second) != 7 ||
        (sep != 'T' && sep != ' '))
        throw Error(ErrorKind::InvalidArgument, "--now: '" + text + "' is not YYYY-MM-DDTHH:MM:SS");
    return c;
}

Conversation read_conversation(const Args& args) {
    const std::string source = args.get_or("messages", "-");
    const std::string text = read_all(source);
    nlohmann::ordered_json doc;
    try {
        doc = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::InvalidArgument, source, std::string("malformed JSON: ") + e.what());
    }
    std::string messages = text, tools;
    if (doc.is_object()) {
        if (!doc.contains("messages")) throw Error(ErrorKind::InvalidArgument, source, "expected an array of messages or {\"messages\": [...]}");
        messages = doc["messages"].dump();
        if (doc.contains("tools") && !doc["tools"].is_null()) tools = doc["tools"].dump();
    }
    if (auto path = args.get("tools")) tools = read_all(*path);
    Conversation c = parse_conversation_json(messages, tools, source);
    c.variables_json = args.get_or("variables", "");
    return c;
}

}  // namespace

int cmd_chat_template(int argc, char** argv) {
    const Args args(argc, argv, 2, {"no-generation-prompt", "json", "help"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    args.allow_only({"model", "template", "messages", "tools", "variables", "name", "no-generation-prompt", "special", "now", "json", "help"});
    if (args.has("model") == args.has("template"))
        throw Error(ErrorKind::InvalidArgument, std::string("give exactly one of --model or --template\n") + kUsage);

    const Conversation conversation = read_conversation(args);
    ChatRenderOptions options;
    options.add_generation_prompt = !args.has("no-generation-prompt");
    for (const std::string& kv : args.all("special")) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw Error(ErrorKind::InvalidArgument, "--special: '" + kv + "' is not KEY=VALUE");
        options.special_tokens[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (auto now = args.get("now")) options.now = parse_clock(*now);

    std::string prompt, origin;
    std::unique_ptr<Tokenizer> tokenizer;
    if (auto dir = args.get("model")) {
        const ModelChatTemplates templates = ModelChatTemplates::load(*dir);
        prompt = templates.render(conversation, options, args.get_or("name", ""));
        origin = templates.origin();
        if (args.has("json")) tokenizer = load_tokenizer_if_present(*dir);
    } else {
        const std::string path = *args.get("template");
        prompt = ChatTemplate::parse(read_all(path), path).render(conversation, options);
        origin = path;
    }
    if (!args.has("json")) {
        std::fwrite(prompt.data(), 1, prompt.size(), stdout);
        return 0;
    }
    nlohmann::json out;
    out["prompt"] = prompt;
    out["template"] = origin;
    if (tokenizer) {
        const auto ids = tokenizer->encode(prompt, /*add_special_tokens=*/false);
        nlohmann::json tokens = nlohmann::json::array();
        for (int64_t id : ids) tokens.push_back(tokenizer->id_to_token(id));
        out["ids"] = ids;
        out["tokens"] = tokens;
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace lorascope::cli
