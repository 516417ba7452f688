// The BPE model: vocabulary, merge ranks, and the merge loop over one pre-token, with tokenizers'
// handling of characters missing from the vocabulary (byte fallback to <0xXX> tokens, else the
// unknown token, consecutive ones fused).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

struct BpeOptions {
    bool ignore_merges = false;   // a word found whole in the vocabulary is one token (Llama 3)
    std::optional<std::string> unk_token;
    bool fuse_unk = false;
    bool byte_fallback = false;   // a missing character becomes its bytes' <0xXX> tokens
};

class BpeModel {
public:
    // merges are (left, right) pairs in rank order. Throws Error(Format) naming `path` when a merge
    // or the unk_token uses a token that is not in the vocabulary.
    BpeModel(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
             const std::string& path, BpeOptions options);

    // Ids of one pre-token (for byte-level BPE written in byte-level characters). Characters
    // missing from the vocabulary become byte tokens or the unknown token, or are dropped when
    // the model has neither (byte-level vocabularies).
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
    BpeOptions options_;
    int64_t unk_id_ = -1;
    std::vector<int64_t> byte_ids_;  // id of <0xXX> per byte, -1 where missing (with byte_fallback)

    // Pre-tokens repeat a lot in real text; tokenizers keeps a similar bounded cache.
    static constexpr size_t kCacheCapacity = 10000;
    static constexpr size_t kCacheMaxWordBytes = 256;
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

}  // namespace lorascope::tokenizer
