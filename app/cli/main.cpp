// lorascope-cli: the headless face of the engine. JSON Lines in and out so scripts and tests
// can drive it.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "commands.h"
#include "lorascope/error.h"

namespace {

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

const Command kCommands[] = {
    {"info", lorascope::cli::cmd_info, "print a JSON summary of a model directory (and adapters)"},
    {"tokenize", lorascope::cli::cmd_tokenize, "encode text to ids or decode ids to text"},
    {"chat-template", lorascope::cli::cmd_chat_template, "print the prompt a model's chat template makes of a conversation"},
    {"generate", lorascope::cli::cmd_generate, "generate for JSON Lines requests"},
    {"score", lorascope::cli::cmd_score, "cross-entropy of given targets (JSON Lines)"},
    {"bench", lorascope::cli::cmd_bench, "run a workload through the engine and report speed and memory"},
    {"serve", lorascope::cli::cmd_serve, "serve the engine over LoRAX's HTTP API (and OpenAI /v1/completions)"},
};

void usage(FILE* out) {
    std::fprintf(out, "usage: lorascope-cli <command> [options]\n\ncommands:\n");
    for (const auto& c : kCommands) std::fprintf(out, "  %-13s %s\n", c.name, c.summary);
    std::fprintf(out, "\nRun 'lorascope-cli <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const auto& c : kCommands) {
        if (std::strcmp(argv[1], c.name) != 0) continue;
        try {
            return c.run(argc, argv);
        } catch (const lorascope::Error& e) {
            std::fprintf(stderr, "lorascope-cli %s: %s\n", c.name, e.what());
            return e.kind() == lorascope::ErrorKind::InvalidArgument ? 2 : 1;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lorascope-cli %s: internal error: %s\n", c.name, e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "lorascope-cli: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
