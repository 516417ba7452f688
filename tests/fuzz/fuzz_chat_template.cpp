// Chat templates on arbitrary input: a template source, then (split by kPartSeparator) the
// messages JSON, the tools JSON and the template variables JSON; absent parts mean a default
// conversation. Each input is parsed and rendered with and without the generation prompt under
// limits small enough that every input finishes in milliseconds even where the template loops,
// recurses or multiplies strings: that the engine's limits bound every input is what this target
// checks, besides the usual rule (only lorascope::Error may refuse an input). The nesting limit
// stays at its default, so that the deepest recursion the engine allows runs under ASan's larger
// stack frames. Renders must be valid UTF-8, within the output limit, and the same twice.
#include <optional>

#include "chat/py_text.h"
#include "fuzz_support.h"
#include "lorascope/chat.h"

using namespace lorascope;

namespace {

const char* const kDefaultMessages =
    R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},)"
    R"( {"role": "assistant", "content": "<think>x</think>\n\nHello", "tool_calls": [{"type": "function",)"
    R"( "function": {"name": "f", "arguments": {"a": 1}}}]}, {"role": "tool", "content": "{\"r\": 2}"},)"
    R"( {"role": "user", "content": "Bye"}])";

ChatTemplateLimits fuzz_limits() {
    ChatTemplateLimits limits;
    limits.max_steps = 200'000;
    limits.max_loop_iterations = 20'000;
    limits.max_output_bytes = 256 << 10;
    return limits;
}

void check_render(const std::string& out, const ChatTemplateLimits& limits) {
    if (static_cast<int64_t>(out.size()) > limits.max_output_bytes) {
        std::fprintf(stderr, "render of %zu bytes over the output limit\n", out.size());
        std::abort();
    }
    if (chat::invalid_utf8_at(out) != std::string::npos) {
        std::fprintf(stderr, "render is not valid UTF-8\n");
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 4);
    const ChatTemplateLimits limits = fuzz_limits();
    std::optional<ChatTemplate> parsed;
    LORASCOPE_FUZZ_PARSE(parsed = ChatTemplate::parse(std::string(parts[0]), "fuzz.jinja", limits));
    if (!parsed) return 0;
    std::optional<Conversation> conversation;
    const std::string messages = parts.size() > 1 && !parts[1].empty() ? std::string(parts[1]) : kDefaultMessages;
    LORASCOPE_FUZZ_PARSE(conversation = parse_conversation_json(messages, parts.size() > 2 ? std::string(parts[2]) : "", "fuzz input"));
    if (!conversation) return 0;
    if (parts.size() > 3) conversation->variables_json = std::string(parts[3]);
    ChatRenderOptions options;
    options.limits = limits;
    options.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    options.now = ChatClock{2026, 1, 2, 3, 4, 5};
    for (const bool generation_prompt : {true, false}) {
        options.add_generation_prompt = generation_prompt;
        std::optional<std::string> first;
        LORASCOPE_FUZZ_PARSE(first = parsed->render(*conversation, options));
        if (!first) continue;
        check_render(*first, limits);
        std::string again;
        LORASCOPE_FUZZ_PARSE(again = parsed->render(*conversation, options));
        if (again != *first) {
            std::fprintf(stderr, "two renders of the same input differ\n");
            std::abort();
        }
    }
    return 0;
}
