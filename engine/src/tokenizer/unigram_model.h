// The Unigram model as Hugging Face's tokenizers runs it: best-scoring segmentation of one
// pre-token (double-precision scores, first candidate wins ties), unknown characters scored
// min_score - 10 and consecutive unknowns fused into one <unk>.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

class UnigramModel {
public:
    UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id);

    void encode_word(std::string_view word, std::vector<int64_t>& out) const;
    int64_t size() const { return static_cast<int64_t>(pieces_.size()); }
    const std::string& piece(int64_t id) const { return pieces_[static_cast<size_t>(id)].first; }
    const std::unordered_map<std::string, int64_t>& ids() const { return ids_; }

private:
    // A byte trie: child of (node, byte) in one hash map; token id per node (-1 for none).
    std::unordered_map<uint64_t, int32_t> children_;
    std::vector<int64_t> node_token_{-1};

    std::vector<std::pair<std::string, double>> pieces_;
    std::unordered_map<std::string, int64_t> ids_;
    int64_t unk_id_;
    double unk_score_;
};

}  // namespace lorascope::tokenizer
