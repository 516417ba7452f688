#include "tokenizer/unigram_model.h"

#include "tokenizer/unicode.h"

#include <limits>

namespace lorascope::tokenizer {

namespace {
uint64_t child_key(int32_t node, unsigned char byte) { return (static_cast<uint64_t>(node) << 8) | byte; }
constexpr double kUnknownPenalty = 10.0;
}  // namespace

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id)
    : pieces_(std::move(pieces)), unk_id_(unk_id) {
    double min_score = std::numeric_limits<double>::infinity();
    ids_.reserve(pieces_.size());
    for (size_t id = 0; id < pieces_.size(); ++id) {
        const auto& [piece, score] = pieces_[id];
        min_score = std::min(min_score, score);
        if (!ids_.emplace(piece, static_cast<int64_t>(id)).second || piece.empty()) continue;  // first id wins
        int32_t node = 0;
        for (char c : piece) {
            auto [it, inserted] = children_.emplace(child_key(node, static_cast<unsigned char>(c)),
                                                    static_cast<int32_t>(node_token_.size()));
            if (inserted) node_token_.push_back(-1);
            node = it->second;
        }
        node_token_[static_cast<size_t>(node)] = static_cast<int64_t>(id);
    }
    unk_score_ = min_score - kUnknownPenalty;
}

void UnigramModel::encode_word(std::string_view word, std::vector<int64_t>& out) const {
    struct Best {
        int64_t id = -1;
        double score = 0.0;
        int64_t starts_at = -1;
    };
    const size_t size = word.size();
    std::vector<Best> best(size + 1);
    size_t start = 0;
    while (start < size) {
        const double base = best[start].score;
        size_t char_len;
        utf8_next(word, start, &char_len);
        bool has_single_char = false;
        int32_t node = 0;
        for (size_t end = start; end < size; ++end) {
            auto it = children_.find(child_key(node, static_cast<unsigned char>(word[end])));
            if (it == children_.end()) break;
            node = it->second;
            const int64_t id = node_token_[static_cast<size_t>(node)];
            if (id < 0) continue;
            const size_t key_end = end + 1;
            const double candidate = base + pieces_[static_cast<size_t>(id)].second;
            Best& target = best[key_end];
            if (target.starts_at < 0 || candidate > target.score) target = {id, candidate, static_cast<int64_t>(start)};
            if (key_end - start == char_len) has_single_char = true;
        }
        if (!has_single_char) {
            Best& target = best[start + char_len];
            const double candidate = base + unk_score_;
            if (target.starts_at < 0 || candidate > target.score) target = {unk_id_, candidate, static_cast<int64_t>(start)};
        }
        start += char_len;
    }
    std::vector<int64_t> reversed;
    bool previous_unknown = false;
    for (size_t end = size; end > 0;) {
        const Best& node = best[end];
        const bool unknown = node.id == unk_id_;
        if (!(unknown && previous_unknown)) reversed.push_back(node.id);  // consecutive unknowns fuse
        previous_unknown = unknown;
        end = static_cast<size_t>(node.starts_at);
    }
    out.insert(out.end(), reversed.rbegin(), reversed.rend());
}

}  // namespace lorascope::tokenizer
