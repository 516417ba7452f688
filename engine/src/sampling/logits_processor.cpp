#include "sampling/logits_processor.h"

#include <algorithm>
#include <limits>

#include "lorascope/error.h"
#include "sampling/row_subset.h"

namespace lorascope::sampling {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

at::Tensor long_tensor(const std::vector<int64_t>& values, const at::Tensor& like) {
    return at::tensor(values, at::TensorOptions().dtype(at::kLong)).to(like.device());
}

// HF: score = gather(scores, input_ids); score < 0 ? score * penalty : score / penalty; scatter.
// Done on flat indices into the scores buffer so that only the touched entries move. A token that
// occurs several times gets the same value written several times, as in HF's scatter.
void repetition_penalty(at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    const int64_t vocab = scores.size(1);
    std::vector<int64_t> flat;
    std::vector<float> penalty;
    for (size_t r = 0; r < rows.size(); ++r) {
        const double p = rows[r].params->repetition_penalty;
        if (p == 1.0) continue;
        for (int64_t id : *rows[r].input_ids) {
            if (id < 0 || id >= vocab) continue;  // ids beyond the head (added tokens) have no score
            flat.push_back(static_cast<int64_t>(r) * vocab + id);
            penalty.push_back(static_cast<float>(p));
        }
    }
    if (flat.empty()) return;
    at::Tensor index = long_tensor(flat, scores);
    at::Tensor flat_scores = scores.view({-1});
    at::Tensor picked = flat_scores.index_select(0, index);
    at::Tensor factor = at::tensor(penalty, at::TensorOptions().dtype(at::kFloat)).to(scores.device());
    at::Tensor penalised = at::where(picked < 0, picked * factor, picked / factor);
    flat_scores.index_copy_(0, index, penalised);
}

// HF's NoRepeatNGramLogitsProcessor: ban every token that would complete an n-gram already present
// in input_ids (prompt included for decoder-only models).
void no_repeat_ngram(std::vector<int64_t>& banned_flat, const std::vector<LogitsRow>& rows, int64_t vocab) {
    for (size_t r = 0; r < rows.size(); ++r) {
        const int64_t n = rows[r].params->no_repeat_ngram_size;
        if (n <= 0) continue;
        const std::vector<int64_t>& ids = *rows[r].input_ids;
        const int64_t len = static_cast<int64_t>(ids.size());
        if (len + 1 < n) continue;
        const int64_t prefix_start = len - (n - 1);
        for (int64_t i = 0; i + n <= len; ++i) {
            if (std::equal(ids.begin() + i, ids.begin() + i + n - 1, ids.begin() + prefix_start)) {
                const int64_t banned = ids[i + n - 1];
                if (banned >= 0 && banned < vocab) banned_flat.push_back(static_cast<int64_t>(r) * vocab + banned);
            }
        }
    }
}

// NoBadWordsLogitsProcessor: the last token of a banned sequence whose other tokens end input_ids
// (a one-token sequence always). Sequences longer than input_ids never apply.
void bad_words(std::vector<int64_t>& banned_flat, const std::vector<LogitsRow>& rows, int64_t vocab) {
    for (size_t r = 0; r < rows.size(); ++r) {
        const std::vector<int64_t>& ids = *rows[r].input_ids;
        for (const auto& seq : rows[r].params->bad_words_ids) {
            const size_t prefix = seq.size() - 1;
            if (seq.size() > ids.size()) continue;
            if (!std::equal(seq.begin(), seq.end() - 1, ids.end() - static_cast<std::ptrdiff_t>(prefix))) continue;
            if (seq.back() >= vocab)
                throw Error(ErrorKind::InvalidArgument, "generation_config.json",
                            "bad_words_ids names token " + std::to_string(seq.back()) + ", outside the vocabulary of " +
                                std::to_string(vocab));
            banned_flat.push_back(static_cast<int64_t>(r) * vocab + seq.back());
        }
    }
}

// MinLengthLogitsProcessor and MinNewTokensLengthLogitsProcessor: eos is impossible while the
// row is shorter than its minimum (both reduce to one count of new tokens).
void min_length(std::vector<int64_t>& banned_flat, const std::vector<LogitsRow>& rows, int64_t vocab) {
    for (size_t r = 0; r < rows.size(); ++r) {
        const ResolvedGenerationParams& p = *rows[r].params;
        if (p.eos_token_ids.empty()) continue;
        const int64_t generated = static_cast<int64_t>(rows[r].input_ids->size()) - rows[r].input_ids_length;
        if (generated >= p.min_new_tokens_for(rows[r].input_ids_length)) continue;
        for (int64_t eos : p.eos_token_ids)
            if (eos >= 0 && eos < vocab) banned_flat.push_back(static_cast<int64_t>(r) * vocab + eos);
    }
}

// ForcedBOSTokenLogitsProcessor (cur_len == 1) and ForcedEOSTokenLogitsProcessor
// (cur_len == max_length - 1): the row becomes -inf everywhere but the forced token, which gets 0.
void forced_tokens(at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    const int64_t vocab = scores.size(1);
    std::vector<int64_t> forced_rows, forced_flat;
    for (size_t r = 0; r < rows.size(); ++r) {
        const ResolvedGenerationParams& p = *rows[r].params;
        if (!p.forced_bos_token_id && !p.forced_eos_token_id) continue;
        const int64_t cur_len = static_cast<int64_t>(rows[r].input_ids->size());
        std::optional<int64_t> forced;
        if (p.forced_bos_token_id && cur_len == 1) forced = p.forced_bos_token_id;
        if (p.forced_eos_token_id) {
            const int64_t max_length = rows[r].input_ids_length + p.max_new_tokens_for(rows[r].input_ids_length);
            if (cur_len == max_length - 1) forced = p.forced_eos_token_id;  // applied after BOS, so it wins
        }
        if (!forced) continue;
        if (*forced < 0 || *forced >= vocab)
            throw Error(ErrorKind::InvalidArgument, "generation_config.json",
                        "forced token id " + std::to_string(*forced) + " is outside the vocabulary of " +
                            std::to_string(vocab));
        forced_rows.push_back(static_cast<int64_t>(r));
        forced_flat.push_back(static_cast<int64_t>(r) * vocab + *forced);
    }
    if (forced_rows.empty()) return;
    scores.index_fill_(0, long_tensor(forced_rows, scores), kNegInf);
    scores.view({-1}).index_fill_(0, long_tensor(forced_flat, scores), 0.0f);
}

}  // namespace

int64_t min_tokens_to_keep(const ResolvedGenerationParams& params) {
    if (params.num_beams <= 1) return 1;
    return params.eos_token_ids.empty() ? 2 : static_cast<int64_t>(params.eos_token_ids.size()) + 1;
}

void apply_logits_processors(at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    TORCH_CHECK(scores.dim() == 2 && scores.size(0) == static_cast<int64_t>(rows.size()) && scores.is_contiguous(),
                "apply_logits_processors: scores must be a contiguous [rows, vocab] tensor matching rows");
    const int64_t vocab = scores.size(1);
    repetition_penalty(scores, rows);
    // N-gram bans and eos suppression both set entries to -inf and commute: one fill for both.
    std::vector<int64_t> banned;
    no_repeat_ngram(banned, rows, vocab);
    bad_words(banned, rows, vocab);
    min_length(banned, rows, vocab);
    if (!banned.empty()) scores.view({-1}).index_fill_(0, long_tensor(banned, scores), kNegInf);
    forced_tokens(scores, rows);
}

void renormalize_logits(at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    std::vector<int64_t> idx;
    for (size_t r = 0; r < rows.size(); ++r)
        if (rows[r].params->renormalize_logits) idx.push_back(static_cast<int64_t>(r));
    apply_to_rows(scores, idx, [](const at::Tensor& s) { return s.log_softmax(-1); });
}

void process_logits(at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    apply_logits_processors(scores, rows);
    apply_logits_warpers(scores, rows);
    renormalize_logits(scores, rows);
}

}  // namespace lorascope::sampling
