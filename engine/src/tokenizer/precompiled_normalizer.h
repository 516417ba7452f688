// SentencePiece's precompiled character map (nmt_nfkc and friends) applied the way Hugging Face's
// tokenizers applies it, which differs from SentencePiece itself: it walks extended grapheme
// clusters, and a cluster shorter than 6 bytes with any mapped prefix is replaced as a whole by
// that prefix's mapping ("ﬀ\u0301" -> "ff"); other clusters are mapped character by character.
// SentencePiece's own longest-prefix lookup is here too, for spm_processor.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::tokenizer {

class PrecompiledNormalizer {
public:
    // The charsmap blob: u32 trie size, darts-clone double-array trie, NUL-separated replacements.
    // Throws Error(Format) naming `path` on a malformed blob.
    PrecompiledNormalizer(std::string_view blob, const std::string& path);
    std::string normalize(std::string_view text) const;
    // SentencePiece's own lookup: the replacement of the longest key that prefixes text, with the
    // key's length.
    std::optional<std::string_view> longest_prefix(std::string_view text, size_t* length) const;

private:
    // The replacement of the shortest key that prefixes `chunk`, if any.
    std::optional<std::string_view> transform(std::string_view chunk) const;
    // Calls visit(key_length, replacement) for each key that prefixes chunk, shortest first, until
    // it returns true.
    template <class Visit>
    void walk(std::string_view chunk, Visit&& visit) const;

    std::vector<uint32_t> trie_;
    std::string replacements_;
};

}  // namespace lorascope::tokenizer
