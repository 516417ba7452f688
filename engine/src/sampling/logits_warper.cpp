// The do_sample-only processors ("warpers" before transformers 4.42): temperature, top-k, top-p,
// min-p, typical-p, each with HF's formula and its min_tokens_to_keep rule. Each runs once over
// the rows that use it, with per-row parameters as [n, 1] columns.
#include <algorithm>
#include <limits>

#include "sampling/logits_processor.h"
#include "sampling/row_subset.h"

namespace lorascope::sampling {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// For a sorted axis of length `vocab`: true on the `keep[r]` positions at the front (or back).
at::Tensor keep_mask(const std::vector<int64_t>& keep, int64_t vocab, const at::Tensor& like, bool at_front) {
    at::Tensor position = at::arange(vocab, at::TensorOptions().dtype(at::kLong).device(like.device())).view({1, -1});
    at::Tensor k = long_column(keep, like);
    return at_front ? position.lt(k) : position.ge(vocab - k);
}

void temperature(at::Tensor& scores, const std::vector<LogitsRow>& rows, const std::vector<int64_t>& sampled) {
    std::vector<int64_t> idx;
    std::vector<float> t;
    for (int64_t r : sampled) {
        const double value = rows[r].params->temperature;
        if (value == 1.0) continue;
        idx.push_back(r);
        t.push_back(static_cast<float>(value));
    }
    apply_to_rows(scores, idx, [&](const at::Tensor& s) { return s.div_(parameter_column(t, s)); });
}

// HF: remove scores < the k-th largest score, k = max(top_k, min_tokens_to_keep) capped at vocab.
void top_k(at::Tensor& scores, const std::vector<LogitsRow>& rows, const std::vector<int64_t>& sampled) {
    const int64_t vocab = scores.size(1);
    std::vector<int64_t> idx, k;
    for (int64_t r : sampled) {
        const int64_t value = rows[r].params->top_k;
        if (value == 0) continue;
        idx.push_back(r);
        k.push_back(std::min(std::max(value, min_tokens_to_keep(*rows[r].params)), vocab));
    }
    if (idx.empty()) return;
    const int64_t k_max = *std::max_element(k.begin(), k.end());
    if (k_max >= vocab && *std::min_element(k.begin(), k.end()) >= vocab) return;  // keeps everything
    apply_to_rows(scores, idx, [&](const at::Tensor& s) {
        at::Tensor top = std::get<0>(s.topk(k_max, -1, /*largest=*/true, /*sorted=*/true));
        at::Tensor kth = top.gather(1, long_column(k, s) - 1);
        return s.masked_fill_(s < kth, kNegInf);
    });
}

// HF: sort ascending, cumulative softmax; remove where cumulative <= 1 - top_p, keeping the last
// min_tokens_to_keep.
void top_p(at::Tensor& scores, const std::vector<LogitsRow>& rows, const std::vector<int64_t>& sampled) {
    const int64_t vocab = scores.size(1);
    std::vector<int64_t> idx, keep;
    std::vector<float> threshold;
    for (int64_t r : sampled) {
        const double value = rows[r].params->top_p;
        if (!(value < 1.0)) continue;
        idx.push_back(r);
        threshold.push_back(static_cast<float>(1.0 - value));
        keep.push_back(min_tokens_to_keep(*rows[r].params));
    }
    apply_to_rows(scores, idx, [&](const at::Tensor& s) {
        auto sorted = s.sort(-1, /*descending=*/false);
        at::Tensor cumulative = std::get<0>(sorted).softmax(-1).cumsum(-1);
        at::Tensor remove_sorted = cumulative.le(parameter_column(threshold, s));
        remove_sorted.masked_fill_(keep_mask(keep, vocab, s, /*at_front=*/false), false);
        at::Tensor remove = remove_sorted.scatter(1, std::get<1>(sorted), remove_sorted);
        return s.masked_fill_(remove, kNegInf);
    });
}

// HF: remove tokens whose probability is below min_p times the top probability, keeping the
// min_tokens_to_keep most likely. With one token to keep the most likely token survives anyway
// (min_p <= 1), so the argsort HF does is only needed for beam sampling.
void min_p(at::Tensor& scores, const std::vector<LogitsRow>& rows, const std::vector<int64_t>& sampled) {
    const int64_t vocab = scores.size(1);
    std::vector<int64_t> idx, keep;
    std::vector<float> factor;
    for (int64_t r : sampled) {
        const auto& value = rows[r].params->min_p;
        if (!value) continue;
        idx.push_back(r);
        factor.push_back(static_cast<float>(*value));
        keep.push_back(min_tokens_to_keep(*rows[r].params));
    }
    if (idx.empty()) return;
    const bool needs_sort = *std::max_element(keep.begin(), keep.end()) > 1;
    apply_to_rows(scores, idx, [&](const at::Tensor& s) {
        at::Tensor probs = s.softmax(-1);
        at::Tensor top = std::get<0>(probs.max(-1, /*keepdim=*/true));
        at::Tensor remove = probs.lt(parameter_column(factor, s) * top);
        if (needs_sort) {
            at::Tensor order = s.argsort(-1, /*descending=*/true);
            at::Tensor remove_sorted = remove.gather(1, order);
            remove_sorted.masked_fill_(keep_mask(keep, vocab, s, /*at_front=*/true), false);
            remove = remove_sorted.scatter(1, order, remove_sorted);
        }
        return s.masked_fill_(remove, kNegInf);
    });
}

// HF's TypicalLogitsWarper: keep the tokens whose surprisal is closest to the entropy until
// their mass reaches typical_p.
void typical_p(at::Tensor& scores, const std::vector<LogitsRow>& rows, const std::vector<int64_t>& sampled) {
    const int64_t vocab = scores.size(1);
    std::vector<int64_t> idx, keep;
    std::vector<float> mass;
    for (int64_t r : sampled) {
        const double value = rows[r].params->typical_p;
        if (!(value < 1.0)) continue;
        idx.push_back(r);
        mass.push_back(static_cast<float>(value));
        keep.push_back(min_tokens_to_keep(*rows[r].params));
    }
    apply_to_rows(scores, idx, [&](const at::Tensor& s) {
        at::Tensor normalized = s.log_softmax(-1);
        at::Tensor p = normalized.exp();
        at::Tensor entropy = -(normalized * p).nansum(-1, /*keepdim=*/true);
        at::Tensor shifted = ((-normalized) - entropy).abs();
        auto sorted = shifted.sort(-1, /*descending=*/false);
        const at::Tensor& sorted_scores = std::get<0>(sorted);
        const at::Tensor& order = std::get<1>(sorted);
        at::Tensor cumulative = s.gather(-1, order).softmax(-1).cumsum(-1);
        at::Tensor last = cumulative.lt(parameter_column(mass, s)).sum(1).clamp_max(vocab - 1);
        at::Tensor remove_sorted = sorted_scores.gt(sorted_scores.gather(1, last.view({-1, 1})));
        remove_sorted.masked_fill_(keep_mask(keep, vocab, s, /*at_front=*/true), false);
        at::Tensor remove = remove_sorted.scatter(1, order, remove_sorted);
        return s.masked_fill_(remove, kNegInf);
    });
}

// Truncation after top-k only needs the candidates top-k kept: when every row that uses top-p,
// min-p or typical-p also has a small top-k, those run on the [rows, k] candidate scores instead
// of sorting the whole vocabulary. -inf entries carry no probability, so the kept set is HF's.
bool truncate_candidates_only(at::Tensor& scores, const std::vector<LogitsRow>& rows,
                              const std::vector<int64_t>& tail) {
    const int64_t vocab = scores.size(1);
    int64_t k_max = 0;
    for (int64_t r : tail) {
        const ResolvedGenerationParams& p = *rows[r].params;
        if (p.top_k == 0) return false;
        k_max = std::max(k_max, std::max(p.top_k, min_tokens_to_keep(p)));
    }
    if (k_max * 4 > vocab) return false;
    at::Tensor index = at::tensor(tail, at::TensorOptions().dtype(at::kLong)).to(scores.device());
    at::Tensor sub = scores.index_select(0, index);
    // Ties at the k-th score survive top-k in HF; then there are more candidates than k.
    if (sub.isfinite().sum(1).max().item<int64_t>() > k_max) return false;
    auto top = sub.topk(k_max, -1, /*largest=*/true, /*sorted=*/true);
    at::Tensor candidates = std::get<0>(top).contiguous();
    std::vector<LogitsRow> candidate_rows;
    std::vector<int64_t> all;
    for (size_t i = 0; i < tail.size(); ++i) {
        candidate_rows.push_back(rows[tail[i]]);
        all.push_back(static_cast<int64_t>(i));
    }
    top_p(candidates, candidate_rows, all);
    min_p(candidates, candidate_rows, all);
    typical_p(candidates, candidate_rows, all);
    sub.fill_(kNegInf).scatter_(1, std::get<1>(top), candidates);
    scores.index_copy_(0, index, sub);
    return true;
}

}  // namespace

void apply_logits_warpers(at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    TORCH_CHECK(scores.dim() == 2 && scores.size(0) == static_cast<int64_t>(rows.size()) && scores.is_contiguous(),
                "apply_logits_warpers: scores must be a contiguous [rows, vocab] tensor matching rows");
    std::vector<int64_t> sampled, tail;
    for (size_t r = 0; r < rows.size(); ++r) {
        const ResolvedGenerationParams& p = *rows[r].params;
        if (!p.do_sample) continue;
        sampled.push_back(static_cast<int64_t>(r));
        if (p.top_p < 1.0 || p.min_p || p.typical_p < 1.0) tail.push_back(static_cast<int64_t>(r));
    }
    if (sampled.empty()) return;
    temperature(scores, rows, sampled);
    top_k(scores, rows, sampled);
    if (tail.empty() || truncate_candidates_only(scores, rows, tail)) return;
    top_p(scores, rows, tail);
    min_p(scores, rows, tail);
    typical_p(scores, rows, tail);
}

}  // namespace lorascope::sampling
