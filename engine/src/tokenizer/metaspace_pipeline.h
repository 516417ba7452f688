// The text side of Hugging Face's SentencePiece-style fast tokenizers: the normalizer (Precompiled
// charsmap, Strip, Replace(" {2,}" -> "▁") as SpmConverter writes it; Prepend("▁") and
// Replace(" " -> "▁") as LlamaConverter's legacy pipeline does) then the pre-tokenizer
// (WhitespaceSplit, Metaspace, or none), producing the words the Unigram or BPE model segments.
#pragma once

#include "tokenizer/precompiled_normalizer.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::tokenizer {

enum class PrependScheme { Always, First, Never };

// Each U+2581 of a piece as a space (or dropped): what every SentencePiece-style decoder does.
std::string metaspace_to_spaces(std::string_view piece, bool drop = false);

class MetaspacePipeline {
public:
    MetaspacePipeline() = default;  // no normalizer, no pre-tokenizer
    // From tokenizer.json's "normalizer" and "pre_tokenizer"; Error(Unsupported) naming path and
    // the component for anything else.
    static MetaspacePipeline from_json(const nlohmann::json& normalizer, const nlohmann::json& pre_tokenizer,
                                       const std::string& path);
    // What transformers' SpmConverter builds from a model file: its charsmap, Strip(right),
    // Replace(" {2,}"), then Metaspace with `prepend` (and WhitespaceSplit before it for Pegasus).
    static MetaspacePipeline from_spm_converter(const std::string& precompiled_charsmap, PrependScheme prepend,
                                                bool whitespace_split, const std::string& path);
    // What LlamaConverter builds: legacy, Prepend("▁") (with add_prefix_space) and Replace(" ");
    // otherwise no normalizer and Metaspace(prepend, split=false).
    static MetaspacePipeline llama(bool legacy, bool add_prefix_space);

    // The normalizer, applied to the text between non-normalized added tokens.
    std::string normalize(std::string_view text) const;
    // Words of normalized text between added tokens; `at_text_start` says whether it begins the
    // input (for PrependScheme::First).
    void words(std::string_view normalized, bool at_text_start, std::vector<std::string>& out) const;
    PrependScheme prepend_scheme() const { return prepend_; }
    std::string describe() const;

private:
    enum class Step { Precompiled, StripLeft, StripRight, CollapseSpaces, PrependMetaspace, ReplaceSpaces };
    void add_normalizer(const nlohmann::json& config, const std::string& path);
    void add_pre_tokenizer(const nlohmann::json& config, const std::string& path);

    std::vector<Step> normalizer_;
    std::shared_ptr<const PrecompiledNormalizer> precompiled_;
    bool whitespace_split_ = false;
    bool metaspace_ = false;
    bool split_ = true;
    PrependScheme prepend_ = PrependScheme::Always;
};

}  // namespace lorascope::tokenizer
