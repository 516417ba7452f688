// load_tokenizer: picks the backend from the files present, and the decode pipeline shared by
// every backend.
#include "lorascope/tokenizer.h"

#include "lorascope/error.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/marian_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/unicode.h"

#include <algorithm>

#include <sys/stat.h>

namespace lorascope {

const char* to_string(TokenizerKind kind) {
    switch (kind) {
        case TokenizerKind::SentencePiece: return "sentencepiece";
        case TokenizerKind::ByteLevelBpe: return "byte-level-bpe";
        case TokenizerKind::SentencePieceBpe: return "sentencepiece-bpe";
        case TokenizerKind::SentencePiecePair: return "sentencepiece-pair";
    }
    return "unknown";
}

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
    EncodeOptions options;
    options.add_special_tokens = add_special_tokens;
    return encode(text, options);
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
    const auto decoder = make_decoder(skip_special_tokens);
    std::string bytes;
    for (int64_t id : ids) decoder->push(id, bytes);
    decoder->finish(bytes);
    std::string text = tokenizer::utf8_lossy(bytes);
    return clean_up_tokenization_spaces() ? clean_up_tokenization(text) : text;
}

std::optional<int64_t> Tokenizer::language_token_id(const std::string& code) const {
    const auto& codes = language_codes();
    if (std::find(codes.begin(), codes.end(), code) == codes.end()) return std::nullopt;
    return token_to_id(code);
}

bool Tokenizer::takes_language_options() const {
    if (language_codes().empty()) return false;
    // Asked of encode() itself, which refuses the options where they do not apply.
    EncodeOptions probe;
    probe.add_special_tokens = false;
    probe.tgt_lang = language_codes().front();
    try {
        (void)encode("", probe);
        return true;
    } catch (const Error&) {
        return false;
    }
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

namespace {

using tokenizer::HfTokenizerConfig;
using tokenizer::TokenizerFamily;

std::unique_ptr<Tokenizer> from_tokenizer_json(const std::string& dir, HfTokenizerConfig config) {
    using namespace tokenizer;
    const std::string json_path = dir + "/tokenizer.json";
    const nlohmann::json json = read_json_file(json_path);
    if (!json.is_object() || !json.contains("model") || !json["model"].is_object())
        throw Error(ErrorKind::Format, json_path, "no \"model\" object");
    // Older files omit model.type: a BPE model has merges, a Unigram model a list of [piece, score].
    std::string type = json["model"].contains("type") && json["model"]["type"].is_string()
                           ? json["model"]["type"].get<std::string>()
                           : std::string();
    if (type.empty() && json["model"].contains("merges")) type = "BPE";
    if (type.empty() && json["model"].contains("vocab") && json["model"]["vocab"].is_array()) type = "Unigram";
    // Byte-level BPE says so in its pre-tokenizer or decoder; other BPE is SentencePiece-style.
    const bool byte_level = (json.contains("pre_tokenizer") && json["pre_tokenizer"].dump().find("\"ByteLevel\"") != std::string::npos) ||
                            (json.contains("decoder") && json["decoder"].dump().find("\"ByteLevel\"") != std::string::npos);
    if (type == "BPE" && byte_level)
        return interpreting(json_path, [&] { return BpeTokenizer::from_tokenizer_json(json_path, json, std::move(config)); });
    if (type == "BPE" || type == "Unigram") return SpmTokenizer::from_tokenizer_json(dir, json_path, json, std::move(config));
    throw Error(ErrorKind::Unsupported, json_path, "model of type '" + type + "' is not supported (BPE or Unigram)");
}

// A SentencePiece model file without tokenizer.json: transformers converts it with the converter
// of the class tokenizer_config.json names.
std::unique_ptr<Tokenizer> from_model_file(const std::string& dir, const std::string& name, HfTokenizerConfig config) {
    const std::string path = dir + "/" + name;
    if (name == "sentencepiece.bpe.model" && config.family != TokenizerFamily::MBart50 && config.family != TokenizerFamily::Nllb)
        throw Error(ErrorKind::Unsupported, path,
                    "sentencepiece.bpe.model needs tokenizer_config.json's tokenizer_class to say which layout it has "
                    "(MBart50Tokenizer or NllbTokenizer are supported; it names '" + config.tokenizer_class + "')");
    return tokenizer::SpmTokenizer::from_model_file(dir, path, std::move(config));
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
    using namespace tokenizer;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) throw Error(ErrorKind::NotFound, dir, "no such directory");
    if (!S_ISDIR(st.st_mode)) throw Error(ErrorKind::InvalidArgument, dir, "not a directory");

    HfTokenizerConfig config = read_hf_tokenizer_config(dir);
    // MarianTokenizer has no fast version: its SentencePiece pair wins over any tokenizer.json.
    const bool marian_files = file_exists(dir + "/source.spm") && file_exists(dir + "/target.spm") && file_exists(dir + "/vocab.json");
    if (marian_files && (config.family == TokenizerFamily::Marian || config.family == TokenizerFamily::Unknown))
        return MarianTokenizer::load(dir, std::move(config));
    if (file_exists(dir + "/tokenizer.json")) return from_tokenizer_json(dir, std::move(config));
    for (const char* name : {"spiece.model", "sentencepiece.bpe.model", "tokenizer.model"})
        if (file_exists(dir + "/" + name)) return from_model_file(dir, name, std::move(config));
    if (file_exists(dir + "/vocab.json") && file_exists(dir + "/merges.txt"))
        return interpreting(dir + "/vocab.json", [&] { return BpeTokenizer::from_vocab_merges(dir, std::move(config)); });
    if (file_exists(dir + "/vocab.json")) throw Error(ErrorKind::NotFound, dir + "/merges.txt", "vocab.json is present but merges.txt is missing");
    throw Error(ErrorKind::NotFound, dir,
                "no tokenizer files (tokenizer.json, spiece.model, sentencepiece.bpe.model, tokenizer.model, "
                "source.spm + target.spm + vocab.json, or vocab.json + merges.txt)");
}

}  // namespace lorascope
