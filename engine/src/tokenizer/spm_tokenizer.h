// SentencePiece-style tokenizers as Hugging Face's fast classes run them: added tokens split out
// around the normalizer, the Metaspace pipeline, a Unigram model (T5/mT5, Pegasus, mBART-50) or a
// BPE model with byte fallback (Llama/Mistral) or without (NLLB), the class's post-processor or
// language codes, and a Metaspace or Replace/ByteFallback/Fuse/Strip decoder. Built from
// tokenizer.json, or from the model file alone as transformers' converters build it
// (spm_converters.h).
#pragma once

#include "tokenizer/bpe_model.h"
#include "tokenizer/metaspace_pipeline.h"
#include "tokenizer/tokenizer_base.h"
#include "tokenizer/unigram_model.h"

#include <memory>

namespace lorascope::tokenizer {

// The decoders these tokenizers use.
struct SpmDecoder {
    enum class Kind {
        Metaspace,  // each U+2581 becomes a space; the first token loses every U+2581 (unless "never")
        Fused,      // Replace(U+2581 -> " "), optional ByteFallback, Fuse, optional Strip(" ", 1, 0)
    };
    Kind kind = Kind::Metaspace;
    bool drop_first_metaspace = true;
    bool byte_fallback = false;
    bool strip_first_space = false;

    // tokenizer.json's "decoder"; Error(Unsupported) naming path for anything else.
    static SpmDecoder from_json(const nlohmann::json& config, const std::string& path);
    std::string describe() const;
};

class SpmTokenizer : public TokenizerBase {
public:
    static std::unique_ptr<SpmTokenizer> from_tokenizer_json(const std::string& dir, const std::string& path,
                                                             const nlohmann::json& json, HfTokenizerConfig config);
    // model_path: spiece.model, sentencepiece.bpe.model or tokenizer.model, converted by the
    // converter of config's family (T5 when none is named, Llama for tokenizer.model).
    static std::unique_ptr<SpmTokenizer> from_model_file(const std::string& dir, const std::string& model_path,
                                                         HfTokenizerConfig config);

    TokenizerKind kind() const override { return bpe_ ? TokenizerKind::SentencePieceBpe : TokenizerKind::SentencePiece; }
    std::optional<std::string> token_bytes(int64_t id, bool first) const override;
    std::optional<unsigned char> fallback_byte(int64_t id) const override;
    bool strips_first_space() const override { return decoder_.kind == SpmDecoder::Kind::Fused && decoder_.strip_first_space; }

protected:
    std::string normalize(std::string_view text) const override { return pipeline_.normalize(text); }
    void encode_text(std::string_view normalized, bool at_start, bool target, std::vector<int64_t>& out) const override;
    const std::string* model_token(int64_t id) const override;
    std::optional<int64_t> model_token_to_id(const std::string& token) const override;
    int64_t model_vocab_size() const override;

private:
    SpmTokenizer(MetaspacePipeline pipeline, SpmDecoder decoder)
        : pipeline_(std::move(pipeline)), decoder_(decoder) {}
    void read_json_model(const nlohmann::json& model, const std::string& path);
    // finish_setup, the class's post-processor, and the description.
    void finish(const std::string& dir, HfTokenizerConfig config, const std::string& source);

    std::unique_ptr<UnigramModel> unigram_;
    std::unique_ptr<BpeModel> bpe_;
    MetaspacePipeline pipeline_;
    SpmDecoder decoder_;
};

}  // namespace lorascope::tokenizer
