// Marian (opus-mt) tokenizers as transformers' MarianTokenizer runs them, which has no fast
// version: SentencePiece itself encodes source text with source.spm (target text with target.spm),
// the pieces map to ids through one joint vocab.json (target_vocab.json decodes when
// separate_vocabs), a >>xx<< language code at the start of the text is one token and every other
// >>...<< is removed, </s> ends the sequence; decoding runs target.spm's DecodePieces between
// special tokens, which read as themselves plus a space, and strips the result.
#pragma once

#include "tokenizer/spm_processor.h"
#include "tokenizer/tokenizer_base.h"

#include <memory>
#include <unordered_map>

namespace lorascope::tokenizer {

class MarianTokenizer : public TokenizerBase {
public:
    static std::unique_ptr<MarianTokenizer> load(const std::string& dir, HfTokenizerConfig config);

    TokenizerKind kind() const override { return TokenizerKind::SentencePiecePair; }
    std::optional<std::string> token_bytes(int64_t id, bool first) const override;
    std::unique_ptr<Decoder> make_decoder(bool skip_special_tokens) const override;

    // What the slow tokenizer turns an id into: vocab.json's token, added tokens first, <unk> else.
    std::string token_for(int64_t id) const;
    bool is_special_token(const std::string& token) const;
    const SpmProcessor& target_model() const { return *target_; }

protected:
    void encode_text(std::string_view text, bool at_start, bool target, std::vector<int64_t>& out) const override;
    const std::string* model_token(int64_t id) const override;
    std::optional<int64_t> model_token_to_id(const std::string& token) const override;
    // Hugging Face counts the source vocabulary (with separate_vocabs, target ids may run past it).
    int64_t model_vocab_size() const override { return source_size_; }

private:
    MarianTokenizer() = default;
    int64_t piece_to_id(const std::string& piece, bool target) const;

    std::unique_ptr<SpmProcessor> source_, target_;
    std::unordered_map<std::string, int64_t> encoder_, target_encoder_;
    std::vector<std::string> decoder_;  // id -> token ("" where vocab.json has no such id)
    bool separate_vocabs_ = false;
    int64_t source_size_ = 0;
    std::string unk_token_ = "<unk>";
};

// MarianTokenizer's language_code_re (">>.+<<", Python's re: `.` is anything but a newline):
// splits a code matched at the start of text off, and removes every match from the rest.
std::pair<std::string, std::string> split_marian_language_code(std::string_view text);

}  // namespace lorascope::tokenizer
