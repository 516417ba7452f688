// The Split pre-tokenizer patterns of byte-level BPE tokenizers, matched by hand instead of by a
// regex engine: std::regex has no \p{..} classes, backtracks without bound, and these patterns are
// short enough to follow alternative by alternative with Oniguruma's leftmost-first semantics.
// Every matcher runs in time linear in its input. A pattern not listed here is refused by name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::tokenizer {

enum class SplitPattern {
    Gpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    Bloom,   // BLOOM's " ?[^(\s|[.,!?…。，、।۔،])]+"
    Llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    Qwen2,   // the same with \p{N} (one digit at a time)
};

// The pattern whose tokenizer.json spelling is exactly `regex`, if it is one of ours.
std::optional<SplitPattern> split_pattern_from_regex(const std::string& regex);
const std::string& split_pattern_regex(SplitPattern pattern);
const char* split_pattern_name(SplitPattern pattern);

// tokenizers' Split with behavior Isolated: every match, and every run of text between matches,
// becomes a piece (in order; their concatenation is `text`). Bytes that are not UTF-8 count as
// one U+FFFD each for matching and are kept as they are in the pieces.
void split_isolated(std::string_view text, SplitPattern pattern, std::vector<std::string>& out);

}  // namespace lorascope::tokenizer
