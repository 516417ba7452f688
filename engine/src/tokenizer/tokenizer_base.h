// What every backend shares: added tokens split out of the text around the normalizer (as
// tokenizers' extract_and_normalize does), the post-processor or language codes, special ids, the
// vocabulary lookups that combine the model's vocabulary with added tokens, and the decoder that
// concatenates token_bytes with byte-fallback runs.
#pragma once

#include "lorascope/tokenizer.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/hf_tokenizer_config.h"
#include "tokenizer/post_processor.h"

#include <string_view>

namespace lorascope::tokenizer {

// Where mBART-50 / NLLB put the language code around a sequence (their fast classes' set_src_lang /
// set_tgt_lang_special_tokens).
enum class LanguagePlacement {
    None,        // no language codes in the post-processor (Marian's are written in the text)
    PrefixCode,  // [code] X </s>   (mBART-50; NLLB)
    SuffixCode,  // X </s> [code]   (NLLB with legacy_behaviour)
};

struct Languages {
    std::vector<std::string> codes;
    LanguagePlacement placement = LanguagePlacement::None;
    std::string default_source, default_target;
};

class TokenizerBase : public Tokenizer {
public:
    using Tokenizer::encode;
    std::vector<int64_t> encode(const std::string& text, const EncodeOptions& options) const override;
    int64_t vocab_size() const override;
    std::optional<int64_t> token_to_id(const std::string& token) const override;
    std::string id_to_token(int64_t id) const override;
    bool is_special(int64_t id) const override;
    const SpecialIds& special_ids() const override { return special_ids_; }
    std::string describe() const override { return description_; }
    bool clean_up_tokenization_spaces() const override { return clean_up_; }
    const std::vector<std::string>& language_codes() const override { return languages_.codes; }
    // The decoder of token_bytes: each kept token's bytes in turn, except that a run of
    // byte-fallback tokens is decoded as a whole (tokenizers' ByteFallback decoder).
    std::unique_ptr<Decoder> make_decoder(bool skip_special_tokens) const override;

    // The byte a token stands for where the decoder has ByteFallback (<0x41> -> 'A').
    virtual std::optional<unsigned char> fallback_byte(int64_t id) const;
    // Whether the decoder strips one leading space from what the first token(s) decode to.
    virtual bool strips_first_space() const { return false; }

protected:
    // The model's own part: the normalizer (applied to each stretch of text between the
    // non-normalized added tokens), and normalized text between added tokens to ids; `at_start`
    // says whether the text begins the input (Metaspace's prepend_scheme "first").
    virtual std::string normalize(std::string_view text) const { return std::string(text); }
    virtual void encode_text(std::string_view normalized, bool at_start, bool target, std::vector<int64_t>& out) const = 0;
    virtual const std::string* model_token(int64_t id) const = 0;
    virtual std::optional<int64_t> model_token_to_id(const std::string& token) const = 0;
    virtual int64_t model_vocab_size() const = 0;

    // Adds the special tokens transformers adds on load (from the configs and class defaults)
    // and resolves the special ids. Call once the model and tokenizer.json's tokens are in place.
    void finish_setup(const HfTokenizerConfig& config);
    // What the family's Hugging Face class does to the post-processor on load: Llama's from
    // add_bos_token / add_eos_token, mBART-50's and NLLB's language codes. Call after finish_setup.
    void apply_class_post_processor(const HfTokenizerConfig& config);
    // The ids encode() produces for the text without special tokens.
    std::vector<int64_t> encode_plain(std::string_view text, bool target) const;
    // Adds the special tokens of the post-processor or the language code.
    void add_special_tokens(std::vector<int64_t>& ids, const EncodeOptions& options) const;
    const std::string* token_string(int64_t id) const;

    AddedVocabulary added_;
    PostProcessor post_;
    SpecialIds special_ids_;
    Languages languages_;
    bool clean_up_ = false;
    std::string dir_;  // names the tokenizer in errors about a request's languages
    std::string description_;
};

// A byte-fallback token: tokenizers' ByteFallback accepts "<0x" + two characters that Rust's
// u8::from_str_radix reads in base 16 (either case, an optional '+') + ">".
std::optional<unsigned char> byte_fallback_value(const std::string& token);

}  // namespace lorascope::tokenizer
