// The text side of Hugging Face's SentencePiece-style fast tokenizers (T5): normalizer
// (Precompiled charsmap, Strip, Replace("  +" -> "▁")) then pre-tokenizer (WhitespaceSplit,
// Metaspace), producing the words the Unigram model segments.
#pragma once

#include "tokenizer/precompiled_normalizer.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::tokenizer {

enum class PrependScheme { Always, First, Never };

class MetaspacePipeline {
public:
    // From tokenizer.json's "normalizer" and "pre_tokenizer"; Error(Unsupported) naming path and
    // the component for anything else.
    static MetaspacePipeline from_json(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer,
                                       const std::string& path);
    // What transformers' SpmConverter builds from spiece.model alone.
    static MetaspacePipeline from_spm_converter(const std::string& precompiled_charsmap, const std::string& path);

    // Words of one text segment (the text between added tokens); `at_text_start` says whether the
    // segment begins the input (for PrependScheme::First).
    void words(std::string_view segment, bool at_text_start, std::vector<std::string>& out) const;
    PrependScheme prepend_scheme() const { return prepend_; }
    std::string describe() const;

private:
    enum class Step { Precompiled, StripLeft, StripRight, CollapseSpaces };
    void add_normalizer(const nlohmann::json& config, const std::string& path);
    void add_pre_tokenizer(const nlohmann::json& config, const std::string& path);
    std::string normalize(std::string_view text) const;

    std::vector<Step> normalizer_;
    std::shared_ptr<const PrecompiledNormalizer> precompiled_;
    bool whitespace_split_ = false;
    bool metaspace_ = false;
    bool split_ = true;
    PrependScheme prepend_ = PrependScheme::Always;
};

}  // namespace lorascope::tokenizer
