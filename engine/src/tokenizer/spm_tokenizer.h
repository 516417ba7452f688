// SentencePiece (spiece.model) with Hugging Face's T5 pipeline around it: added tokens split
// out of the text, </s> appended, Metaspace decoding.
#pragma once

#include "tokenizer/spm_processor.h"
#include "tokenizer/tokenizer_base.h"

#include <memory>
#include <unordered_map>

namespace lorascope::tokenizer {

class SpmTokenizer : public TokenizerBase {
public:
    // tokenizer_json may be null (spiece.model alone); when given, its added tokens,
    // post-processor and decoder settings are used and its other components checked.
    static std::unique_ptr<SpmTokenizer> load(const std::string& dir, const nlohmann::json* tokenizer_json,
                                              HfTokenizerConfig config);

    TokenizerKind kind() const override { return TokenizerKind::SentencePiece; }
    std::optional<std::string> token_bytes(int64_t id, bool first) const override;

protected:
    void encode_text(std::string_view text, std::vector<int64_t>& out) const override;
    const std::string* model_token(int64_t id) const override;
    std::optional<int64_t> model_token_to_id(const std::string& token) const override;
    int64_t model_vocab_size() const override { return processor_->piece_size(); }

private:
    explicit SpmTokenizer(std::unique_ptr<SpmProcessor> processor);
    std::unique_ptr<SpmProcessor> processor_;
    std::unordered_map<std::string, int64_t> piece_ids_;
    bool strip_first_space_ = true;  // Metaspace decoder with a prepend scheme other than "never"
};

}  // namespace lorascope::tokenizer
