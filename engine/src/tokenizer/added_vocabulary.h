// Tokens matched in raw text before the model sees it (<s>, <mask>, <extra_id_0>), with Hugging
// Face tokenizers' flags: lstrip/rstrip swallow neighbouring whitespace, single_word requires word
// boundaries, normalized says whether the match is against normalized text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::tokenizer {

struct AddedToken {
    std::string content;
    int64_t id = -1;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
    bool normalized = false;
};

// One entry of tokenizer.json's "added_tokens" (id, content and the matching flags).
AddedToken added_token_from_json(const nlohmann::json& entry);

// A piece of input text: either plain text for the model, or a matched added token.
struct TextSegment {
    std::string_view text;
    int64_t token_id = -1;  // >= 0 when the segment is an added token
};

class AddedVocabulary {
public:
    // A token whose content is already present keeps its first definition (HF does the same).
    void add(const AddedToken& token);
    bool empty() const { return tokens_.empty(); }

    // tokenizers' AddedVocabulary::extract_and_normalize in two steps: split_raw finds the
    // non-normalized tokens in the raw text; each remaining segment is normalized by the caller
    // and split_normalized finds the normalized tokens in that.
    std::vector<TextSegment> split_raw(std::string_view text) const;
    std::vector<TextSegment> split_normalized(std::string_view normalized) const;

    std::optional<int64_t> id_of(const std::string& content) const;
    const AddedToken* by_id(int64_t id) const;
    const std::vector<AddedToken>& tokens() const { return tokens_; }

private:
    struct TrieNode {
        std::unordered_map<unsigned char, int> next;
        int token = -1;  // index into tokens_
    };
    struct Trie {
        std::vector<TrieNode> nodes{1};
        void insert(const std::string& key, int token);
        // Longest token starting at pos, with its byte length.
        int longest_at(std::string_view text, size_t pos, size_t* len) const;
    };
    void split_with(const Trie& trie, std::string_view text, std::vector<TextSegment>& out) const;

    std::vector<AddedToken> tokens_;
    std::unordered_map<std::string, size_t> by_content_;
    std::unordered_map<int64_t, size_t> by_id_;
    Trie raw_trie_, normalized_trie_;
};

}  // namespace lorascope::tokenizer
