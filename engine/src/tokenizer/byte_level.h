// Byte-level pre-tokenization: ByteLevel's own (GPT-2) split, the Split patterns of BLOOM, Llama 3
// and Qwen2 (split_patterns.h), and GPT-2's byte-to-printable-character alphabet that BPE
// vocabularies are written in.
#pragma once

#include "tokenizer/split_patterns.h"

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::tokenizer {

// GPT-2's bytes_to_unicode: every byte as a printable character (UTF-8 encoded).
const std::array<std::string, 256>& byte_to_char();
// The inverse, for decoding: the byte a character stands for, if any.
std::optional<unsigned char> char_to_byte(char32_t cp);
// Maps raw bytes to their byte-level characters.
std::string bytes_to_byte_level(std::string_view bytes);

class ByteLevelPreTokenizer {
public:
    // The pre-tokenizer written by GPT-2/RoBERTa/BART's converters: ByteLevel with its regex.
    static ByteLevelPreTokenizer gpt2(bool add_prefix_space);
    // From tokenizer.json's "pre_tokenizer"; throws Error(Unsupported) naming `path` and the
    // component for anything but ByteLevel, a Split with a pattern of split_patterns.h, or a
    // Sequence of those.
    static ByteLevelPreTokenizer from_json(const nlohmann::json& config, const std::string& path);

    // Splits text into pre-tokens (raw bytes, not yet mapped to byte-level characters).
    std::vector<std::string> split(std::string_view text) const;
    std::string describe() const;

private:
    enum class StepKind { PrefixSpace, Split };
    struct Step {
        StepKind kind;
        SplitPattern pattern;
    };
    void add_json(const nlohmann::json& config, const std::string& path, bool* has_byte_level);
    std::vector<Step> steps_;
};

}  // namespace lorascope::tokenizer
