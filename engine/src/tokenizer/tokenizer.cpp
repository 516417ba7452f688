// load_tokenizer: picks the backend from the files present, and the decode pipeline shared by
// every backend.
#include "lorascope/tokenizer.h"

#include "lorascope/error.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/unicode.h"

#include <sys/stat.h>

namespace lorascope {

const char* to_string(TokenizerKind kind) {
    switch (kind) {
        case TokenizerKind::SentencePiece: return "sentencepiece";
        case TokenizerKind::ByteLevelBpe: return "byte-level-bpe";
    }
    return "unknown";
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
    std::string bytes;
    bool first = true;
    for (int64_t id : ids) {
        if (skip_special_tokens && is_special(id)) continue;
        auto piece = token_bytes(id, first);
        if (!piece) continue;  // unknown ids are dropped, as tokenizers does
        bytes += *piece;
        first = false;
    }
    std::string text = tokenizer::utf8_lossy(bytes);
    return clean_up_tokenization_spaces() ? clean_up_tokenization(text) : text;
}

std::string Tokenizer::clean_up_tokenization(const std::string& text) {
    // The same replacements, in the same order, as transformers' clean_up_tokenization:
    // each is a left-to-right, non-overlapping pass over the result of the previous one.
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    std::string out = text;
    for (const auto& [from, to] : kRules) {
        const std::string f(from);
        if (out.find(f) == std::string::npos) continue;
        std::string next;
        next.reserve(out.size());
        size_t pos = 0;
        for (size_t hit; (hit = out.find(f, pos)) != std::string::npos; pos = hit + f.size()) {
            next.append(out, pos, hit - pos);
            next += to;
        }
        next.append(out, pos, std::string::npos);
        out.swap(next);
    }
    return out;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
    using namespace tokenizer;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) throw Error(ErrorKind::NotFound, dir, "no such directory");
    if (!S_ISDIR(st.st_mode)) throw Error(ErrorKind::InvalidArgument, dir, "not a directory");

    HfTokenizerConfig config = read_hf_tokenizer_config(dir);
    const std::string json_path = dir + "/tokenizer.json";
    const bool has_spm = file_exists(dir + "/spiece.model");
    if (file_exists(json_path)) {
        const nlohmann::json json = read_json_file(json_path);
        if (!json.is_object() || !json.contains("model") || !json["model"].is_object())
            throw Error(ErrorKind::Format, json_path, "no \"model\" object");
        // Older files omit model.type: a BPE model has merges, a Unigram model a list of [piece, score].
        std::string type = json["model"].contains("type") && json["model"]["type"].is_string()
                               ? json["model"]["type"].get<std::string>()
                               : std::string();
        if (type.empty() && json["model"].contains("merges")) type = "BPE";
        if (type.empty() && json["model"].contains("vocab") && json["model"]["vocab"].is_array()) type = "Unigram";
        if (type == "BPE")
            return interpreting(json_path, [&] { return BpeTokenizer::from_tokenizer_json(json_path, json, std::move(config)); });
        if (type == "Unigram" && has_spm)
            return interpreting(json_path, [&] { return SpmTokenizer::load(dir, &json, std::move(config)); });
        if (type == "Unigram")
            throw Error(ErrorKind::Unsupported, json_path,
                        "a Unigram model is only supported together with its spiece.model, which this directory lacks");
        throw Error(ErrorKind::Unsupported, json_path, "model of type '" + type + "' is not supported (BPE or Unigram with spiece.model)");
    }
    if (has_spm) return SpmTokenizer::load(dir, nullptr, std::move(config));
    if (file_exists(dir + "/vocab.json") && file_exists(dir + "/merges.txt"))
        return interpreting(dir + "/vocab.json", [&] { return BpeTokenizer::from_vocab_merges(dir, std::move(config)); });
    if (file_exists(dir + "/vocab.json")) throw Error(ErrorKind::NotFound, dir + "/merges.txt", "vocab.json is present but merges.txt is missing");
    throw Error(ErrorKind::NotFound, dir, "no tokenizer files (tokenizer.json, spiece.model, or vocab.json + merges.txt)");
}

}  // namespace lorascope
