// lorascope-cli score: the mean cross-entropy of given targets, as Hugging Face computes the loss
// when labels are passed, plus each target token's log-probability.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "jsonl_io.h"
#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "lorascope/runtime.h"
#include "lorascope/score.h"
#include "lorascope/tokenizer.h"

namespace lorascope::cli {

namespace {

const char* const kUsage =
    "usage: lorascope-cli score --model DIR [--threads N] [--dtype float32|bfloat16|int8|int4]\n"
    "         [--kv-cache-dtype auto|float32|bfloat16] [--input FILE|-] [--output FILE|-]\n"
    "  input:  JSON Lines {\"id\", \"source\" | \"input_ids\", \"target\" | \"labels\", \"src_lang\", \"tgt_lang\"}\n"
    "          (labels may hold -100 to leave a position out; for decoder-only models the target is the\n"
    "          continuation scored after the source; src_lang / tgt_lang: mBART-50 and NLLB text, as\n"
    "          Hugging Face's tokenizer(source, text_target=target) places them)\n"
    "  output: JSON Lines {\"id\", \"loss\", \"token_logprobs\"} or {\"id\", \"error\"}\n";

nlohmann::json score_one(const nlohmann::json& r, Scorer& scorer, const Tokenizer* tokenizer, const std::string& where) {
    for (const auto& item : r.items())
        if (item.key() != "id" && item.key() != "source" && item.key() != "input_ids" && item.key() != "target" &&
            item.key() != "labels" && item.key() != "src_lang" && item.key() != "tgt_lang")
            throw Error(ErrorKind::InvalidArgument, where, "unknown request field " + json_excerpt(nlohmann::json(item.key())));
    if (r.contains("source") == r.contains("input_ids"))
        throw Error(ErrorKind::InvalidArgument, where, "give exactly one of \"source\" or \"input_ids\"");
    if (r.contains("target") == r.contains("labels"))
        throw Error(ErrorKind::InvalidArgument, where, "give exactly one of \"target\" or \"labels\"");
    if ((r.contains("source") || r.contains("target")) && !tokenizer)
        throw Error(ErrorKind::InvalidArgument, where, "the model directory has no tokenizer; send \"input_ids\" and \"labels\"");
    // Text is encoded as Hugging Face's tokenizer(source, text_target=target) encodes a pair: the
    // source with src_lang, the target as target text (Marian's target model, tgt_lang's code).
    EncodeOptions source_encoding, target_encoding;
    target_encoding.target = true;
    for (const char* key : {"src_lang", "tgt_lang"}) {
        if (!r.contains(key)) continue;
        if (!r[key].is_string()) throw Error(ErrorKind::InvalidArgument, where, std::string("\"") + key + "\" must be a string");
        if (!r.contains("source") && !r.contains("target"))
            throw Error(ErrorKind::InvalidArgument, where, std::string("\"") + key + "\" is for text (\"source\" or \"target\")");
    }
    source_encoding.src_lang = r.value("src_lang", "");
    source_encoding.tgt_lang = target_encoding.tgt_lang = r.value("tgt_lang", "");
    std::vector<int64_t> source, labels;
    if (r.contains("source")) {
        if (!r["source"].is_string()) throw Error(ErrorKind::InvalidArgument, where, "\"source\" must be a string");
        source = tokenizer->encode(r["source"].get<std::string>(), source_encoding);
    } else {
        source = read_ids(r, "input_ids", scorer.vocab_size(), where);
    }
    if (r.contains("target")) {
        if (!r["target"].is_string()) throw Error(ErrorKind::InvalidArgument, where, "\"target\" must be a string");
        // A decoder-only continuation is plain text after the prompt.
        labels = scorer.is_encoder_decoder() ? tokenizer->encode(r["target"].get<std::string>(), target_encoding)
                                             : tokenizer->encode(r["target"].get<std::string>(), false);
    } else {
        labels = read_ids(r, "labels", scorer.vocab_size(), where, kIgnoreLabel);
        for (int64_t t : labels)
            if (t < 0 && t != kIgnoreLabel)
                throw Error(ErrorKind::InvalidArgument, where, "\"labels\" holds " + std::to_string(t) + " (only -100 may be negative)");
    }
    if (source.empty() && scorer.is_encoder_decoder()) throw Error(ErrorKind::InvalidArgument, where, "the source has no tokens");
    const ScoreResult result = scorer.score(source, labels);
    nlohmann::json logprobs = nlohmann::json::array();
    for (const auto& lp : result.token_logprobs) logprobs.push_back(lp ? nlohmann::json(*lp) : nlohmann::json());
    return {{"loss", result.loss}, {"token_logprobs", logprobs}, {"scored_tokens", result.scored_tokens}};
}

}  // namespace

int cmd_score(int argc, char** argv) {
    const Args args(argc, argv, 2, {"help"});
    if (args.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    args.allow_only({"model", "threads", "dtype", "kv-cache-dtype", "input", "output", "help"});
    const std::string dir = args.require("model");
    set_compute_threads(static_cast<int>(args.get_int("threads", 0)));
    const auto scorer = Scorer::open(dir, args.get_or("dtype", "float32"), args.get_or("kv-cache-dtype", "auto"));
    const auto tokenizer = load_tokenizer_if_present(dir);
    const auto lines = read_json_lines(args.get_or("input", "-"));
    JsonLineWriter out(args.get_or("output", "-"));
    for (const auto& line : lines) {
        nlohmann::json id = line.value && line.value->contains("id") ? (*line.value)["id"] : nlohmann::json();
        try {
            if (!line.value) throw Error(ErrorKind::InvalidArgument, line.parse_error);  // names its line
            const std::string where = "line " + std::to_string(line.line_number);
            nlohmann::json result = score_one(*line.value, *scorer, tokenizer.get(), where);
            result["id"] = id;
            out.write(result);
        } catch (const Error& e) {
            out.write({{"id", id}, {"error", e.what()}});
        }
    }
    return 0;
}

}  // namespace lorascope::cli
