#include "tokenizer/precompiled_normalizer.h"

#include "lorascope/error.h"
#include "tokenizer/grapheme.h"
#include "tokenizer/unicode.h"

#include <cstring>

namespace lorascope::tokenizer {

namespace {

// darts-clone unit layout.
bool has_leaf(uint32_t unit) { return (unit >> 8) & 1; }
uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

PrecompiledNormalizer::PrecompiledNormalizer(std::string_view blob, const std::string& path) {
    if (blob.size() < 4) throw Error(ErrorKind::Format, path, "precompiled_charsmap is shorter than its header");
    uint32_t trie_bytes;
    std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as is every platform we build on
    if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4 || trie_bytes == 0)
        throw Error(ErrorKind::Format, path, "precompiled_charsmap has an invalid trie size");
    trie_.resize(trie_bytes / 4);
    std::memcpy(trie_.data(), blob.data() + 4, trie_bytes);
    replacements_.assign(blob.data() + 4 + trie_bytes, blob.size() - 4 - trie_bytes);
}

template <class Visit>
void PrecompiledNormalizer::walk(std::string_view chunk, Visit&& visit) const {
    size_t node = 0;
    uint32_t unit = trie_[0];
    node ^= offset(unit);
    for (size_t i = 0; i < chunk.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(chunk[i]);
        if (c == 0) return;
        node ^= c;
        if (node >= trie_.size()) return;
        unit = trie_[node];
        if (label(unit) != c) return;
        node ^= offset(unit);
        if (node >= trie_.size()) return;
        if (has_leaf(unit)) {
            const size_t start = value(trie_[node]);
            if (start >= replacements_.size()) return;
            const size_t stop = replacements_.find('\0', start);
            const auto replacement =
                std::string_view(replacements_).substr(start, (stop == std::string::npos ? replacements_.size() : stop) - start);
            if (visit(i + 1, replacement)) return;
        }
    }
}

std::optional<std::string_view> PrecompiledNormalizer::transform(std::string_view chunk) const {
    std::optional<std::string_view> found;
    walk(chunk, [&](size_t, std::string_view replacement) {
        found = replacement;
        return true;  // the shortest key, as spm_precompiled's common_prefix_search()[0]
    });
    return found;
}

std::optional<std::string_view> PrecompiledNormalizer::longest_prefix(std::string_view text, size_t* length) const {
    std::optional<std::string_view> found;
    walk(text, [&](size_t key_length, std::string_view replacement) {
        found = replacement;
        *length = key_length;
        return false;
    });
    return found;
}

std::string PrecompiledNormalizer::normalize(std::string_view text) const {
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t end = next_grapheme_end(text, pos);
        const std::string_view grapheme = text.substr(pos, end - pos);
        pos = end;
        if (grapheme.size() < 6) {
            if (auto replaced = transform(grapheme)) {
                out += *replaced;
                continue;
            }
        }
        size_t i = 0;
        while (i < grapheme.size()) {
            size_t len;
            utf8_next(grapheme, i, &len);
            const std::string_view part = grapheme.substr(i, len);
            if (auto replaced = transform(part)) out += *replaced;
            else out += part;
            i += len;
        }
    }
    return out;
}

}  // namespace lorascope::tokenizer
