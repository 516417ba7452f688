// SentencePiece models (spiece.model, T5) encoded the way Hugging Face's fast tokenizer does:
// added tokens split out first, the Metaspace pipeline, the Unigram model over the file's
// pieces and scores, </s> appended; Metaspace decoding.
#pragma once

#include "tokenizer/metaspace_pipeline.h"
#include "tokenizer/tokenizer_base.h"
#include "tokenizer/unigram_model.h"

#include <memory>

namespace lorascope::tokenizer {

class SpmTokenizer : public TokenizerBase {
public:
    // tokenizer_json may be null (spiece.model alone, converted as transformers' T5Converter
    // does); when given, its pipeline, added tokens and post-processor are used.
    static std::unique_ptr<SpmTokenizer> load(const std::string& dir, const nlohmann::json* tokenizer_json,
                                              HfTokenizerConfig config);

    TokenizerKind kind() const override { return TokenizerKind::SentencePiece; }
    std::optional<std::string> token_bytes(int64_t id, bool first) const override;

protected:
    void encode_text(std::string_view text, std::vector<int64_t>& out) const override;
    const std::string* model_token(int64_t id) const override;
    std::optional<int64_t> model_token_to_id(const std::string& token) const override;
    int64_t model_vocab_size() const override { return model_->size(); }

private:
    SpmTokenizer(std::unique_ptr<UnigramModel> model, MetaspacePipeline pipeline)
        : model_(std::move(model)), pipeline_(std::move(pipeline)) {}
    std::unique_ptr<UnigramModel> model_;
    MetaspacePipeline pipeline_;
    bool strip_first_space_ = true;  // Metaspace decoder with a prepend scheme other than "never"
};

}  // namespace lorascope::tokenizer
