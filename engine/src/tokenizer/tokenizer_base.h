// What both backends share: added tokens split out of the text first, the post-processor,
// special ids, and the vocabulary lookups that combine the model's vocabulary with added tokens.
#pragma once

#include "lorascope/tokenizer.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/hf_tokenizer_config.h"
#include "tokenizer/post_processor.h"

#include <string_view>

namespace lorascope::tokenizer {

class TokenizerBase : public Tokenizer {
public:
    std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const override;
    int64_t vocab_size() const override;
    std::optional<int64_t> token_to_id(const std::string& token) const override;
    std::string id_to_token(int64_t id) const override;
    bool is_special(int64_t id) const override;
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string describe() const override { return description_; }
    bool clean_up_tokenization_spaces() const override { return clean_up_; }

protected:
    // The model's own part: text between added tokens to ids, and its vocabulary.
    virtual void encode_text(std::string_view text, std::vector<int64_t>& out) const = 0;
    virtual const std::string* model_token(int64_t id) const = 0;
    virtual std::optional<int64_t> model_token_to_id(const std::string& token) const = 0;
    virtual int64_t model_vocab_size() const = 0;

    // Adds the special tokens transformers adds on load (from the configs and class defaults)
    // and resolves the special ids. Call once the model and tokenizer.json's tokens are in place.
    void finish_setup(const HfTokenizerConfig& config);
    const std::string* token_string(int64_t id) const;

    AddedVocabulary added_;
    PostProcessor post_;
    SpecialIds special_ids_;
    bool clean_up_ = false;
    std::string description_;
};

}  // namespace lorascope::tokenizer
