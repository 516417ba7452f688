// The BPE model: vocabulary, merge ranks, and the merge loop over one pre-token.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

class BpeModel {
public:
    // merges are (left, right) pairs in rank order. Throws Error(Format) naming `path` when a merge
    // uses a token that is not in the vocabulary.
    BpeModel(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
             const std::string& path, bool ignore_merges);

    // Ids of one pre-token written in byte-level characters. Characters missing from the
    // vocabulary are dropped, as tokenizers' BPE does without an unk_token.
    void encode_word(const std::string& word, std::vector<int64_t>& out) const;

    const std::unordered_map<std::string, int64_t>& vocab() const { return vocab_; }
    const std::vector<std::string>& id_to_token() const { return id_to_token_; }

private:
    struct Merge {
        int32_t rank;
        int32_t merged;
    };
    static uint64_t pair_key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }
    void merge_word(const std::string& word, std::vector<int64_t>& out) const;

    std::unordered_map<std::string, int64_t> vocab_;
    std::vector<std::string> id_to_token_;
    std::unordered_map<uint64_t, Merge> merges_;
    bool ignore_merges_;

    // Pre-tokens repeat a lot in real text; tokenizers keeps a similar bounded cache.
    static constexpr size_t kCacheCapacity = 10000;
    static constexpr size_t kCacheMaxWordBytes = 256;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

}  // namespace lorascope::tokenizer
