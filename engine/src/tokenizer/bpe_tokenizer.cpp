#include "tokenizer/bpe_tokenizer.h"

#include "lorascope/error.h"
#include "tokenizer/bpe_files.h"
#include "tokenizer/nfc.h"
#include "tokenizer/unicode.h"

#include <fstream>

namespace lorascope::tokenizer {

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_tokenizer_json(const std::string& path, const nlohmann::json& json,
                                                                 HfTokenizerConfig config) {
    try {
        const auto& normalizer = json.contains("normalizer") ? json["normalizer"] : nlohmann::json();
        const bool nfc = normalizer.is_object() && normalizer.value("type", "") == "NFC";
        if (!normalizer.is_null() && !nfc)
            throw Error(ErrorKind::Unsupported, path,
                        "normalizer of type '" + normalizer.value("type", "?") + "' is not supported for byte-level BPE (only NFC)");
        const auto& decoder = json.contains("decoder") ? json["decoder"] : nlohmann::json();
        if (!decoder.is_object() || decoder.value("type", "") != "ByteLevel")
            throw Error(ErrorKind::Unsupported, path,
                        "decoder " + (decoder.is_object() ? "of type '" + decoder.value("type", "?") + "'" : std::string("null")) +
                        " is not supported for byte-level BPE (only ByteLevel)");
        auto bpe = bpe_model_from_json(json.at("model"), path, false);

        const auto& pre_json = json.contains("pre_tokenizer") ? json["pre_tokenizer"] : nlohmann::json();
        ByteLevelPreTokenizer pre = ByteLevelPreTokenizer::from_json(pre_json, path);
        // transformers' GPT2/Bart fast tokenizers rewrite a bare ByteLevel pre-tokenizer to honour add_prefix_space.
        if (config.add_prefix_space && pre_json.is_object() && pre_json.value("type", "") == "ByteLevel")
            pre = ByteLevelPreTokenizer::gpt2(*config.add_prefix_space);

        std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer(std::move(bpe), std::move(pre)));
        tok->nfc_ = nfc;
        tok->post_ = PostProcessor::from_json(json.contains("post_processor") ? json["post_processor"] : nlohmann::json(), path);
        if (json.contains("added_tokens")) {
            for (const auto& t : json["added_tokens"]) tok->added_.add(added_token_from_json(t));
        }
        // Without tokenizer_config.json or config.json, the pipeline itself says which family it is.
        if (config.family == TokenizerFamily::Unknown) {
            if (tok->post_.name == "RobertaProcessing") config.family = TokenizerFamily::Bart;
            else if (tok->pre_.describe().find("BLOOM") != std::string::npos) config.family = TokenizerFamily::Bloom;
            else if (tok->added_.id_of("<|endoftext|>")) config.family = TokenizerFamily::Gpt2;
        }
        apply_family_defaults(config);
        tok->finish_setup(config);
        tok->apply_class_post_processor(config);
        tok->dir_ = path.substr(0, path.rfind('/'));
        tok->description_ = "byte-level BPE from tokenizer.json (" + std::string(nfc ? "NFC, " : "") + tok->pre_.describe() + ", post-processor " +
                            tok->post_.name + ", family " + to_string(config.family) + ")";
        return tok;
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::Format, path, std::string("malformed tokenizer.json: ") + e.what());
    }
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_vocab_merges(const std::string& dir, HfTokenizerConfig config) {
    const std::string vocab_path = dir + "/vocab.json", merges_path = dir + "/merges.txt";
    auto vocab = parse_bpe_vocab(read_json_file(vocab_path), vocab_path);

    std::ifstream in(merges_path, std::ios::binary);
    if (!in) throw Error(ErrorKind::NotFound, merges_path, "cannot open file");
    std::vector<std::pair<std::string, std::string>> merges;
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (first && line.rfind("#version", 0) == 0) {
            first = false;
            continue;
        }
        first = false;
        if (line.empty()) continue;
        merges.push_back(split_merge(line, merges_path, merges.size()));
    }

    // Without a tokenizer class or model type, the vocabulary tells RoBERTa/BART apart from GPT-2.
    if (config.family == TokenizerFamily::Unknown) {
        if (vocab.count("<s>") && vocab.count("</s>") && vocab.count("<mask>")) config.family = TokenizerFamily::Bart;
        else if (vocab.count("<|endoftext|>")) config.family = TokenizerFamily::Gpt2;
        else if (vocab.count("<s>") && vocab.count("</s>")) config.family = TokenizerFamily::Bloom;
    }
    auto bpe = std::make_unique<BpeModel>(std::move(vocab), merges, merges_path, BpeOptions{});
    std::unique_ptr<BpeTokenizer> tok(
        new BpeTokenizer(std::move(bpe), ByteLevelPreTokenizer::gpt2(config.add_prefix_space.value_or(false))));
    apply_family_defaults(config);
    tok->finish_setup(config);
    if (config.family == TokenizerFamily::Bart) {
        // RobertaProcessing, as transformers' RobertaConverter builds it.
        auto cls = tok->token_to_id(config.special_tokens["cls_token"].content);
        auto sep = tok->token_to_id(config.special_tokens["sep_token"].content);
        if (cls && sep) {
            tok->post_.prefix = {*cls};
            tok->post_.suffix = {*sep};
            tok->post_.name = "RobertaProcessing";
        }
    }
    tok->dir_ = dir;
    tok->description_ = "byte-level BPE from vocab.json + merges.txt (" + tok->pre_.describe() + ", post-processor " +
                        tok->post_.name + ", family " + to_string(config.family) + ")";
    return tok;
}

std::string BpeTokenizer::normalize(std::string_view text) const { return nfc_ ? nfc(text) : std::string(text); }

void BpeTokenizer::encode_text(std::string_view normalized, bool, bool, std::vector<int64_t>& out) const {
    for (const std::string& piece : pre_.split(normalized)) model_->encode_word(bytes_to_byte_level(piece), out);
}

const std::string* BpeTokenizer::model_token(int64_t id) const {
    const auto& tokens = model_->id_to_token();
    if (id < 0 || id >= static_cast<int64_t>(tokens.size()) || tokens[static_cast<size_t>(id)].empty()) return nullptr;
    return &tokens[static_cast<size_t>(id)];
}

std::optional<int64_t> BpeTokenizer::model_token_to_id(const std::string& token) const {
    auto it = model_->vocab().find(token);
    if (it == model_->vocab().end()) return std::nullopt;
    return it->second;
}

// Every id the model can produce: the highest id + 1, which is the token count for a dense
// vocabulary (every real one) and still covers a vocabulary with holes.
int64_t BpeTokenizer::model_vocab_size() const { return static_cast<int64_t>(model_->id_to_token().size()); }

std::optional<std::string> BpeTokenizer::token_bytes(int64_t id, bool) const {
    const std::string* token = token_string(id);
    if (!token) return std::nullopt;
    // tokenizers' ByteLevel decoder: a token whose every character is a byte-level character
    // becomes those bytes; any other token passes through as its own UTF-8.
    std::string bytes;
    size_t pos = 0;
    while (pos < token->size()) {
        size_t len;
        const auto byte = char_to_byte(utf8_next(*token, pos, &len));
        if (!byte) return *token;
        bytes += static_cast<char>(*byte);
        pos += len;
    }
    return bytes;
}

}  // namespace lorascope::tokenizer
