#include "tokenizer/added_vocabulary.h"

#include "tokenizer/unicode.h"

namespace lorascope::tokenizer {

AddedToken added_token_from_json(const nlohmann::json& t) {
    AddedToken token;
    token.id = t.at("id").get<int64_t>();
    token.content = t.at("content").get<std::string>();
    token.special = t.value("special", false);
    token.lstrip = t.value("lstrip", false);
    token.rstrip = t.value("rstrip", false);
    token.single_word = t.value("single_word", false);
    token.normalized = t.value("normalized", false);
    return token;
}

namespace {

// Rust's char::is_alphanumeric plus '_' decides word boundaries for single_word tokens;
// \p{L} and \p{N} approximate Alphabetic and Numeric.
bool is_word_char(char32_t cp) { return cp == U'_' || is_letter(cp) || is_number(cp); }

char32_t last_char(std::string_view text) {
    size_t pos = text.size();
    while (pos > 0 && (static_cast<unsigned char>(text[pos - 1]) & 0xC0) == 0x80) --pos;
    if (pos > 0) --pos;
    size_t len;
    return utf8_next(text, pos, &len);
}

}  // namespace

void AddedVocabulary::Trie::insert(const std::string& key, int token) {
    int node = 0;
    for (unsigned char c : key) {
        auto it = nodes[node].next.find(c);
        if (it == nodes[node].next.end()) {
            nodes.emplace_back();
            const int child = static_cast<int>(nodes.size()) - 1;
            nodes[node].next.emplace(c, child);
            node = child;
        } else {
            node = it->second;
        }
    }
    if (nodes[node].token < 0) nodes[node].token = token;
}

int AddedVocabulary::Trie::longest_at(std::string_view text, size_t pos, size_t* len) const {
    int node = 0, best = -1;
    for (size_t i = pos; i < text.size(); ++i) {
        auto it = nodes[node].next.find(static_cast<unsigned char>(text[i]));
        if (it == nodes[node].next.end()) break;
        node = it->second;
        if (nodes[node].token >= 0) {
            best = nodes[node].token;
            *len = i + 1 - pos;
        }
    }
    return best;
}

void AddedVocabulary::add(const AddedToken& token) {
    if (token.content.empty() || by_content_.count(token.content)) return;
    const size_t index = tokens_.size();
    tokens_.push_back(token);
    by_content_.emplace(token.content, index);
    by_id_.emplace(token.id, index);
    (token.normalized ? normalized_trie_ : raw_trie_).insert(token.content, static_cast<int>(index));
}

std::optional<int64_t> AddedVocabulary::id_of(const std::string& content) const {
    auto it = by_content_.find(content);
    if (it == by_content_.end()) return std::nullopt;
    return tokens_[it->second].id;
}

const AddedToken* AddedVocabulary::by_id(int64_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocabulary::split_with(const Trie& trie, std::string_view text, std::vector<TextSegment>& out) const {
    size_t emitted = 0;  // end of the last segment pushed
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        const int index = trie.longest_at(text, pos, &len);
        if (index < 0) {
            ++pos;
            continue;
        }
        const AddedToken& token = tokens_[static_cast<size_t>(index)];
        size_t start = pos, stop = pos + len;
        if (token.single_word) {
            const bool space_before = start == 0 || !is_word_char(last_char(text.substr(0, start)));
            size_t clen;
            const bool space_after = stop == text.size() || !is_word_char(utf8_next(text, stop, &clen));
            if (!space_before || !space_after) {
                ++pos;
                continue;
            }
        }
        if (token.lstrip) {
            // Swallow whitespace to the left, but never into the previous match.
            while (start > emitted) {
                size_t back = start - 1;
                while (back > emitted && (static_cast<unsigned char>(text[back]) & 0xC0) == 0x80) --back;
                size_t clen;
                if (!is_whitespace(utf8_next(text, back, &clen))) break;
                start = back;
            }
        }
        if (token.rstrip) {
            size_t clen;
            while (stop < text.size() && is_whitespace(utf8_next(text, stop, &clen))) stop += clen;
        }
        if (start > emitted) out.push_back({text.substr(emitted, start - emitted), -1});
        out.push_back({text.substr(start, stop - start), token.id});
        emitted = stop;
        pos = stop;
    }
    if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

std::vector<TextSegment> AddedVocabulary::split_raw(std::string_view text) const {
    std::vector<TextSegment> out;
    split_with(raw_trie_, text, out);
    return out;
}

std::vector<TextSegment> AddedVocabulary::split_normalized(std::string_view normalized) const {
    std::vector<TextSegment> out;
    split_with(normalized_trie_, normalized, out);
    return out;
}

}  // namespace lorascope::tokenizer
