// lorascope-cli generate: greedy decoding of JSON Lines requests in static padded batches.
// (Continuous batching and the full sampling controls arrive with the engine; this command keeps
// the same input/output contract so scripts written against it keep working.)
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "jsonl_io.h"
#include "lorascope/error.h"
#include "lorascope/runtime.h"
#include "models/greedy.h"
#include "models/model.h"

namespace lorascope::cli {

namespace {

const char* const kUsage =
    "usage: lorascope-cli generate --model DIR [--threads N] [--max-batch-size N] [--input FILE|-] [--output FILE|-]\n"
    "  input:  JSON Lines {\"id\", \"prompt\" | \"input_ids\", \"params\": {\"max_new_tokens\"}}\n"
    "  output: JSON Lines {\"id\", \"text\", \"token_ids\", \"finish_reason\", \"prompt_tokens\", \"generated_tokens\"}\n"
    "          or {\"id\", \"error\"} for a request that cannot run (the others go on)\n";

struct Pending {
    nlohmann::json id;
    models::GreedyRequest request;
};

// HF's rule when max_new_tokens is not given: max_length (default 20) counts the decoder start
// token (seq2seq) or the prompt (decoder-only).
int64_t default_max_new_tokens(const models::Model& model, int64_t prompt_tokens) {
    const auto& g = model.generation_config();
    if (g.max_new_tokens) return *g.max_new_tokens;
    const int64_t max_length = g.max_length.value_or(20);
    return std::max<int64_t>(1, model.is_encoder_decoder() ? max_length - 1 : max_length - prompt_tokens);
}

Pending parse_request(const nlohmann::json& r, const models::Model& model, const Tokenizer* tokenizer) {
    Pending p;
    for (const auto& item : r.items())
        if (item.key() != "id" && item.key() != "prompt" && item.key() != "input_ids" && item.key() != "params")
            throw Error(ErrorKind::InvalidArgument, "unknown request field \"" + item.key() + "\"");
    if (r.contains("prompt") == r.contains("input_ids"))
        throw Error(ErrorKind::InvalidArgument, "give exactly one of \"prompt\" or \"input_ids\"");
    if (r.contains("prompt")) {
        if (!r["prompt"].is_string()) throw Error(ErrorKind::InvalidArgument, "\"prompt\" must be a string");
        if (!tokenizer) throw Error(ErrorKind::InvalidArgument, "the model directory has no tokenizer; send \"input_ids\"");
        p.request.prompt = tokenizer->encode(r["prompt"].get<std::string>(), true);
    } else {
        p.request.prompt = read_ids(r, "input_ids", model.vocab_size());
    }
    if (p.request.prompt.empty()) throw Error(ErrorKind::InvalidArgument, "the prompt has no tokens");
    p.request.max_new_tokens = default_max_new_tokens(model, static_cast<int64_t>(p.request.prompt.size()));
    if (r.contains("params")) {
        const auto& params = r["params"];
        if (!params.is_object()) throw Error(ErrorKind::InvalidArgument, "\"params\" must be an object");
        for (const auto& item : params.items()) {
            if (item.key() != "max_new_tokens")
                throw Error(ErrorKind::InvalidArgument, "unknown or unsupported parameter \"" + item.key() +
                                                            "\" (this command decodes greedily; it accepts max_new_tokens)");
            if (!item.value().is_number_integer() || item.value().get<int64_t>() < 1)
                throw Error(ErrorKind::InvalidArgument, "\"max_new_tokens\" must be a positive integer");
            p.request.max_new_tokens = item.value().get<int64_t>();
        }
    }
    return p;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
    const Args args(argc, argv, 2, {"help"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    args.allow_only({"model", "threads", "max-batch-size", "input", "output", "help"});
    const std::string dir = args.require("model");
    const int threads = static_cast<int>(args.get_int("threads", 0));
    const int64_t max_batch = args.get_int("max-batch-size", 8);
    if (max_batch < 1) throw Error(ErrorKind::InvalidArgument, "--max-batch-size must be at least 1");

    set_compute_threads(threads);
    c10::InferenceMode inference;
    const auto model = models::load_model(dir);
    const auto tokenizer = load_tokenizer_if_present(dir);
    const auto lines = read_json_lines(args.get_or("input", "-"));
    JsonLineWriter out(args.get_or("output", "-"));
    const auto options = models::GreedyOptions::from_model(*model);

    std::vector<Pending> pending;
    for (const auto& line : lines) {
        nlohmann::json id = line.value && line.value->contains("id") ? (*line.value)["id"] : nlohmann::json();
        try {
            if (!line.value) throw Error(ErrorKind::InvalidArgument, line.parse_error);
            Pending p = parse_request(*line.value, *model, tokenizer.get());
            p.id = id;
            pending.push_back(std::move(p));
        } catch (const Error& e) {
            out.write({{"id", id}, {"error", e.what()}});
        }
    }
    for (size_t first = 0; first < pending.size(); first += static_cast<size_t>(max_batch)) {
        const size_t last = std::min(pending.size(), first + static_cast<size_t>(max_batch));
        std::vector<models::GreedyRequest> batch;
        for (size_t i = first; i < last; ++i) batch.push_back(pending[i].request);
        std::vector<models::GreedyOutput> results;
        try {
            results = models::greedy_generate(*model, batch, options);
        } catch (const Error& e) {
            for (size_t i = first; i < last; ++i) out.write({{"id", pending[i].id}, {"error", e.what()}});
            continue;
        }
        for (size_t i = first; i < last; ++i) {
            const auto& r = results[i - first];
            out.write({{"id", pending[i].id},
                       {"text", tokenizer ? tokenizer->decode(r.tokens, /*skip_special_tokens=*/true) : std::string()},
                       {"token_ids", r.tokens},
                       {"finish_reason", r.finish_reason},
                       {"prompt_tokens", pending[i].request.prompt.size()},
                       {"generated_tokens", r.tokens.size()}});
        }
    }
    return 0;
}

}  // namespace lorascope::cli
