#include "tokenizer/bpe_model.h"

#include "lorascope/error.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <queue>

namespace lorascope::tokenizer {

BpeModel::BpeModel(std::unordered_map<std::string, int64_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, const std::string& path,
                   BpeOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
    int64_t max_id = -1;
    for (const auto& [token, id] : vocab_) {
        if (id < 0 || id > 0x7FFFFFFF) throw Error(ErrorKind::Format, path, "token '" + token + "' has an invalid id");
        max_id = std::max(max_id, id);
    }
    // Ids index a dense table: a vocabulary whose ids run far past its size ({"a": 2000000000})
    // would allocate gigabytes for nothing, and is no vocabulary a model was trained with.
    if (max_id >= 2 * static_cast<int64_t>(vocab_.size()) + 1024)
        throw Error(ErrorKind::Format, path, "token ids run up to " + std::to_string(max_id) + " for a vocabulary of " +
                                                 std::to_string(vocab_.size()) + " tokens");
    id_to_token_.resize(static_cast<size_t>(max_id + 1));
    for (const auto& [token, id] : vocab_) id_to_token_[static_cast<size_t>(id)] = token;

    if (options_.unk_token) {
        auto it = vocab_.find(*options_.unk_token);
        if (it == vocab_.end()) throw Error(ErrorKind::Format, path, "unk_token '" + *options_.unk_token + "' is not in the vocabulary");
        unk_id_ = it->second;
    }
    if (options_.byte_fallback) {
        byte_ids_.assign(256, -1);
        static const char kHex[] = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
            auto it = vocab_.find(name);
            if (it != vocab_.end()) byte_ids_[static_cast<size_t>(b)] = it->second;
        }
    }
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        auto a = vocab_.find(left), b = vocab_.find(right), m = vocab_.find(left + right);
        if (a == vocab_.end() || b == vocab_.end() || m == vocab_.end()) {
            throw Error(ErrorKind::Format, path,
                        "merge " + std::to_string(rank) + " ('" + left + " " + right + "') uses a token missing from the vocabulary");
        }
        // A repeated pair keeps its last rank: tokenizers collects the merges into a hash map.
        merges_[pair_key(a->second, b->second)] = Merge{static_cast<int32_t>(rank), static_cast<int32_t>(m->second)};
    }
}

void BpeModel::merge_word(const std::string& word, std::vector<int64_t>& out) const {
    struct Symbol {
        int64_t id;
        int prev, next;
        bool alive;
    };
    std::vector<Symbol> symbols;
    auto add = [&symbols](int64_t id) {
        const int index = static_cast<int>(symbols.size());
        symbols.push_back({id, index - 1, index + 1, true});
    };
    // As tokenizers' BPE::merge_word: a pending unknown is added when a known character follows
    // (or at the end), so byte tokens of a later character can precede it.
    int64_t pending_unk = -1;
    size_t pos = 0;
    while (pos < word.size()) {
        size_t len;
        utf8_next(word, pos, &len);
        const std::string_view ch = std::string_view(word).substr(pos, len);
        pos += len;
        auto it = vocab_.find(std::string(ch));
        if (it != vocab_.end()) {
            if (pending_unk >= 0) add(pending_unk);
            pending_unk = -1;
            add(it->second);
            continue;
        }
        if (options_.byte_fallback &&
            std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_ids_[static_cast<unsigned char>(c)] >= 0; })) {
            for (char c : ch) add(byte_ids_[static_cast<unsigned char>(c)]);
            continue;
        }
        if (unk_id_ < 0) continue;  // no unk_token: the character is dropped (byte-level vocabularies)
        if (pending_unk >= 0 && !options_.fuse_unk) add(pending_unk);
        pending_unk = unk_id_;
    }
    if (pending_unk >= 0) add(pending_unk);
    if (symbols.empty()) return;
    symbols.back().next = -1;

    // Lowest rank first, then leftmost, as tokenizers' Word::merge_all orders its heap.
    struct Candidate {
        int32_t rank;
        int pos;
        int32_t merged;
        bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate> queue;
    auto consider = [&](int left) {
        const int right = symbols[static_cast<size_t>(left)].next;
        if (right < 0) return;
        auto it = merges_.find(pair_key(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id));
        if (it != merges_.end()) queue.push({it->second.rank, left, it->second.merged});
    };
    for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) consider(i);

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        Symbol& left = symbols[static_cast<size_t>(top.pos)];
        if (!left.alive || left.next < 0) continue;
        Symbol& right = symbols[static_cast<size_t>(left.next)];
        auto it = merges_.find(pair_key(left.id, right.id));
        if (it == merges_.end() || it->second.merged != top.merged) continue;  // stale entry
        left.id = top.merged;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
        if (left.prev >= 0) consider(left.prev);
        consider(top.pos);
    }
    for (const Symbol& s : symbols)
        if (s.alive) out.push_back(s.id);
}

void BpeModel::encode_word(const std::string& word, std::vector<int64_t>& out) const {
    if (options_.ignore_merges) {
        auto it = vocab_.find(word);
        if (it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    const bool cacheable = word.size() <= kCacheMaxWordBytes;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        auto it = cache_.find(word);
        if (it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int64_t> ids;
    merge_word(word, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() < kCacheCapacity) cache_.emplace(word, std::move(ids));
    }
}

}  // namespace lorascope::tokenizer
