// lorascope-cli tokenize: encode text to ids (and tokens) or decode ids to text, for debugging
// a model directory's tokenizer. Prints one JSON object.
#include "args.h"
#include "commands.h"
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace lorascope::cli {

namespace {

const char* const kUsage =
    "usage: lorascope-cli tokenize --model DIR (--text STR | --ids 1,2,3) [--no-special]\n"
    "  --text STR     encode STR; prints ids and tokens\n"
    "  --ids LIST     decode comma-separated ids; prints the text\n"
    "  --no-special   encode without the model's special tokens / decode skipping them\n";

std::vector<int64_t> parse_ids(const std::string& list) {
    std::vector<int64_t> ids;
    size_t pos = 0;
    while (pos <= list.size()) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        std::string item = list.substr(pos, comma - pos);
        while (!item.empty() && item.front() == ' ') item.erase(0, 1);
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (item.empty()) {
            if (comma == list.size() && ids.empty() && pos == 0) break;  // --ids ""
            throw Error(ErrorKind::InvalidArgument, "--ids: empty item in '" + list + "'");
        }
        size_t used = 0;
        long long value = 0;
        try {
            value = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size()) throw Error(ErrorKind::InvalidArgument, "--ids: '" + item + "' is not an integer");
        ids.push_back(value);
        pos = comma + 1;
    }
    return ids;
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
    const Args args(argc, argv, 2, {"no-special", "help"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    args.allow_only({"model", "text", "ids", "no-special", "help"});
    const std::string dir = args.require("model");
    const bool special = !args.has("no-special");
    if (args.has("text") == args.has("ids"))
        throw Error(ErrorKind::InvalidArgument, std::string("give exactly one of --text or --ids\n") + kUsage);

    const auto tokenizer = load_tokenizer(dir);
    nlohmann::json out;
    out["tokenizer"] = to_string(tokenizer->kind());
    if (auto text = args.get("text")) {
        const auto ids = tokenizer->encode(*text, special);
        nlohmann::json tokens = nlohmann::json::array();
        for (int64_t id : ids) tokens.push_back(tokenizer->id_to_token(id));
        out["ids"] = ids;
        out["tokens"] = tokens;
    } else {
        const auto ids = parse_ids(*args.get("ids"));
        for (int64_t id : ids)
            if (id < 0 || id >= tokenizer->vocab_size())
                throw Error(ErrorKind::InvalidArgument, "--ids: " + std::to_string(id) + " is outside the vocabulary (size " +
                                                            std::to_string(tokenizer->vocab_size()) + ")");
        out["ids"] = ids;
        out["text"] = tokenizer->decode(ids, !special);
    }
    // Invalid UTF-8 cannot occur (decode replaces it), but never let a dump throw on user data.
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace lorascope::cli
