// The Unigram model: best-scoring segmentation of one pre-token, first candidate winning ties,
// unknown characters scored min_score - 10 and consecutive unknowns fused into one piece. Two
// flavours of the same search:
//  - Hugging Face's tokenizers (fast tokenizers): every piece can match, double-precision scores,
//    the minimum over all pieces;
//  - SentencePiece itself (slow tokenizers such as Marian's, via spm_processor.h): only normal,
//    user-defined and unused pieces are in the trie (unused ones never match), float scores summed
//    as SentencePiece sums them, the minimum and maximum over normal pieces, and user-defined
//    pieces scored length * max - 0.1 so that they always win.
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
    // Hugging Face's flavour.
    UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id);
    // SentencePiece's flavour; types are SpmModelFile::PieceType per piece.
    UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id, std::vector<int> types);

    struct Span {
        size_t begin, end;  // bytes of the word
        int64_t id;         // unk_id for a (fused) run of unknown characters
    };
    std::vector<Span> segment(std::string_view word) const;
    void encode_word(std::string_view word, std::vector<int64_t>& out) const;

    int64_t size() const { return static_cast<int64_t>(pieces_.size()); }
    int64_t unk_id() const { return unk_id_; }
    const std::string& piece(int64_t id) const { return pieces_[static_cast<size_t>(id)].first; }
    const std::unordered_map<std::string, int64_t>& ids() const { return ids_; }

private:
    void build_trie();
    int32_t child(int32_t node, unsigned char byte) const;
    int32_t add_child(int32_t node, unsigned char byte);
    template <class Score>
    std::vector<Span> best_path(std::string_view word) const;

    // A byte trie: the child of (node, byte) in one open-addressing table (a node-based hash map
    // took 7 of 13 s to load a 250,000-piece vocabulary, half of it freeing the nodes again);
    // token id per node (-1 for none).
    std::vector<uint64_t> child_keys_;   // (node << 8 | byte) + 1; 0 marks an empty slot
    std::vector<int32_t> child_nodes_;
    uint64_t child_mask_ = 0;
    std::vector<int64_t> node_token_{-1};

    std::vector<std::pair<std::string, double>> pieces_;
    std::unordered_map<std::string, int64_t> ids_;
    int64_t unk_id_;
    double unk_score_;
    bool sentencepiece_ = false;
    std::vector<int> types_;
    float max_normal_score_ = 0.0f;
};

}  // namespace lorascope::tokenizer
