// Byte-level BPE (GPT-2, RoBERTa/BART, BLOOM, Llama 3, Qwen2 with its NFC normalizer) from
// tokenizer.json or from vocab.json + merges.txt.
#pragma once

#include "tokenizer/bpe_model.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_base.h"

#include <memory>

namespace lorascope::tokenizer {

class BpeTokenizer : public TokenizerBase {
public:
    static std::unique_ptr<BpeTokenizer> from_tokenizer_json(const std::string& path, const nlohmann::json& json,
                                                             HfTokenizerConfig config);
    static std::unique_ptr<BpeTokenizer> from_vocab_merges(const std::string& dir, HfTokenizerConfig config);

    TokenizerKind kind() const override { return TokenizerKind::ByteLevelBpe; }
    std::optional<std::string> token_bytes(int64_t id, bool first) const override;

protected:
    std::string normalize(std::string_view text) const override;
    void encode_text(std::string_view normalized, bool at_start, bool target, std::vector<int64_t>& out) const override;
    const std::string* model_token(int64_t id) const override;
    std::optional<int64_t> model_token_to_id(const std::string& token) const override;
    int64_t model_vocab_size() const override;

private:
    BpeTokenizer(std::unique_ptr<BpeModel> model, ByteLevelPreTokenizer pre)
        : model_(std::move(model)), pre_(std::move(pre)) {}
    std::unique_ptr<BpeModel> model_;
    ByteLevelPreTokenizer pre_;
    bool nfc_ = false;
};

}  // namespace lorascope::tokenizer
