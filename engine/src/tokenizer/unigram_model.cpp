#include "tokenizer/unigram_model.h"

#include "tokenizer/spm_model_file.h"
#include "tokenizer/unicode.h"

#include <cfloat>
#include <limits>

namespace lorascope::tokenizer {

namespace {

uint64_t child_key(int32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }
constexpr double kUnknownPenalty = 10.0;

uint64_t slot_of(uint64_t key, uint64_t mask) { return (key * 0x9E3779B97F4A7C15ull >> 20) & mask; }

}  // namespace

int32_t UnigramModel::child(int32_t node, unsigned char byte) const {
    const uint64_t key = child_key(node, byte) + 1;
    for (uint64_t slot = slot_of(key, child_mask_);; slot = (slot + 1) & child_mask_) {
        if (child_keys_[slot] == key) return child_nodes_[slot];
        if (child_keys_[slot] == 0) return -1;
    }
}

int32_t UnigramModel::add_child(int32_t node, unsigned char byte) {
    const uint64_t key = child_key(node, byte) + 1;
    uint64_t slot = slot_of(key, child_mask_);
    while (child_keys_[slot] != 0 && child_keys_[slot] != key) slot = (slot + 1) & child_mask_;
    if (child_keys_[slot] == 0) {
        child_keys_[slot] = key;
        child_nodes_[slot] = static_cast<int32_t>(node_token_.size());
        node_token_.push_back(-1);
    }
    return child_nodes_[slot];
}

// The trie of the pieces that can match (every piece, or SentencePiece's normal, user-defined and
// unused ones), at most half full.
void UnigramModel::build_trie() {
    size_t bytes = 1;
    for (const auto& entry : pieces_) bytes += entry.first.size();
    size_t capacity = 16;
    while (capacity < 2 * bytes) capacity *= 2;
    child_keys_.assign(capacity, 0);
    child_nodes_.assign(capacity, -1);
    child_mask_ = capacity - 1;
    for (size_t id = 0; id < pieces_.size(); ++id) {
        const std::string& piece = pieces_[id].first;
        if (piece.empty() || ids_.at(piece) != static_cast<int64_t>(id)) continue;  // first id wins
        if (sentencepiece_ && types_[id] != SpmModelFile::Normal && types_[id] != SpmModelFile::UserDefined &&
            types_[id] != SpmModelFile::Unused)
            continue;
        int32_t node = 0;
        for (char c : piece) node = add_child(node, static_cast<unsigned char>(c));
        node_token_[static_cast<size_t>(node)] = static_cast<int64_t>(id);
    }
}

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id)
    : pieces_(std::move(pieces)), unk_id_(unk_id) {
    double min_score = std::numeric_limits<double>::infinity();
    ids_.reserve(pieces_.size());
    for (size_t id = 0; id < pieces_.size(); ++id) {
        const auto& [piece, score] = pieces_[id];
        min_score = std::min(min_score, score);
        ids_.emplace(piece, static_cast<int64_t>(id));  // first id wins
    }
    unk_score_ = min_score - kUnknownPenalty;
    build_trie();
}

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id, std::vector<int> types)
    : pieces_(std::move(pieces)), unk_id_(unk_id), sentencepiece_(true), types_(std::move(types)) {
    // SentencePiece starts the maximum at FLT_MIN (the smallest positive float), so with only
    // negative scores user-defined pieces score about -0.1.
    float min_score = FLT_MAX, max_score = FLT_MIN;
    for (size_t id = 0; id < pieces_.size(); ++id) {
        const auto& [piece, score] = pieces_[id];
        ids_.emplace(piece, static_cast<int64_t>(id));
        const int type = types_[id];
        if (type == SpmModelFile::Normal) {
            min_score = std::min(min_score, static_cast<float>(score));
            max_score = std::max(max_score, static_cast<float>(score));
        }
    }
    max_normal_score_ = max_score;
    unk_score_ = static_cast<double>(min_score - static_cast<float>(kUnknownPenalty));
    build_trie();
}

// Score is double (tokenizers) or float (SentencePiece keeps each best path's score in a float).
template <class Score>
std::vector<UnigramModel::Span> UnigramModel::best_path(std::string_view word) const {
    struct Best {
        int64_t id = -1;
        Score score = 0;
        int64_t starts_at = -1;
    };
    const size_t size = word.size();
    std::vector<Best> best(size + 1);
    for (size_t start = 0; start < size;) {
        const Score base = best[start].score;
        size_t char_len;
        utf8_next(word, start, &char_len);
        bool has_single_char = false;
        int32_t node = 0;
        for (size_t end = start; end < size; ++end) {
            node = child(node, static_cast<unsigned char>(word[end]));
            if (node < 0) break;
            const int64_t id = node_token_[static_cast<size_t>(node)];
            if (id < 0) continue;
            const size_t key_end = end + 1;
            if (sentencepiece_ && types_[static_cast<size_t>(id)] == SpmModelFile::Unused) continue;
            // SentencePiece adds a double score (its user-defined bonus is length * max - 0.1) to
            // the float path score and compares in double before storing the sum as a float.
            double score = pieces_[static_cast<size_t>(id)].second;
            if (sentencepiece_ && types_[static_cast<size_t>(id)] == SpmModelFile::UserDefined)
                score = static_cast<double>(static_cast<float>(key_end - start) * max_normal_score_) - 0.1;
            const double candidate = score + static_cast<double>(base);
            Best& target = best[key_end];
            if (target.starts_at < 0 || candidate > static_cast<double>(target.score))
                target = {id, static_cast<Score>(candidate), static_cast<int64_t>(start)};
            if (key_end - start == char_len) has_single_char = true;
        }
        if (!has_single_char) {
            Best& target = best[start + char_len];
            const Score candidate = static_cast<Score>(unk_score_) + base;
            if (target.starts_at < 0 || candidate > target.score) target = {unk_id_, candidate, static_cast<int64_t>(start)};
        }
        start += char_len;
    }
    std::vector<Span> reversed;
    for (size_t end = size; end > 0;) {
        const Best& node = best[end];
        const size_t begin = static_cast<size_t>(node.starts_at);
        if (node.id == unk_id_ && !reversed.empty() && reversed.back().id == unk_id_) reversed.back().begin = begin;
        else reversed.push_back({begin, end, node.id});  // consecutive unknowns fuse
        end = begin;
    }
    return std::vector<Span>(reversed.rbegin(), reversed.rend());
}

std::vector<UnigramModel::Span> UnigramModel::segment(std::string_view word) const {
    return sentencepiece_ ? best_path<float>(word) : best_path<double>(word);
}

void UnigramModel::encode_word(std::string_view word, std::vector<int64_t>& out) const {
    for (const Span& span : segment(word)) out.push_back(span.id);
}

}  // namespace lorascope::tokenizer
