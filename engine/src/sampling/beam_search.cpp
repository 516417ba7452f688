#include "sampling/beam_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lorascope/error.h"

namespace lorascope::sampling {

BeamSearch::BeamSearch(const ResolvedGenerationParams& params, int64_t decoder_prompt_len, int64_t max_length)
    : num_beams_(params.num_beams),
      length_penalty_(params.length_penalty),
      early_stopping_(params.early_stopping),
      do_sample_(params.do_sample),
      eos_token_ids_(params.eos_token_ids),
      decoder_prompt_len_(decoder_prompt_len),
      max_length_(max_length),
      beam_scores_(static_cast<size_t>(params.num_beams), -1e9f) {
    if (num_beams_ < 1) throw Error(ErrorKind::InvalidArgument, "params", "num_beams must be at least 1");
    // All beams start from the same ids; only the first may contribute at the first step.
    beam_scores_[0] = 0.0f;
}

void BeamSearch::add(std::vector<int64_t> ids, double sum_logprobs, int64_t generated_len) {
    const double score = sum_logprobs / std::pow(static_cast<double>(generated_len), length_penalty_);
    const int64_t count = static_cast<int64_t>(hypotheses_.size());
    if (count < num_beams_ || score > worst_score_) {
        hypotheses_.push_back({score, std::move(ids)});
        if (static_cast<int64_t>(hypotheses_.size()) > num_beams_) {
            // HF sorts (score, index) pairs: ties go to the earlier index.
            std::vector<size_t> order(hypotheses_.size());
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(),
                             [&](size_t a, size_t b) { return hypotheses_[a].score < hypotheses_[b].score; });
            const double second_worst = hypotheses_[order[1]].score;
            hypotheses_.erase(hypotheses_.begin() + static_cast<std::ptrdiff_t>(order[0]));
            worst_score_ = second_worst;
        } else {
            worst_score_ = std::min(score, worst_score_);
        }
    }
}

bool BeamSearch::is_done(double best_sum_logprobs, int64_t cur_len) const {
    if (static_cast<int64_t>(hypotheses_.size()) < num_beams_) return false;
    if (early_stopping_ == EarlyStopping::True) return true;
    double denominator_length = static_cast<double>(cur_len - decoder_prompt_len_);
    // "never" with a positive penalty: the best attainable score uses the longest possible length.
    if (early_stopping_ == EarlyStopping::Never && length_penalty_ > 0.0)
        denominator_length = static_cast<double>(max_length_ - decoder_prompt_len_);
    const double highest_attainable = best_sum_logprobs / std::pow(denominator_length, length_penalty_);
    return worst_score_ >= highest_attainable;
}

BeamSearch::Step BeamSearch::step(const at::Tensor& scores, const std::vector<std::vector<int64_t>>& beams,
                                  const at::Generator& generator) {
    TORCH_CHECK(scores.dim() == 2 && scores.size(0) == num_beams_ && static_cast<int64_t>(beams.size()) == num_beams_,
                "BeamSearch::step: one row of scores and ids per beam");
    TORCH_CHECK(!done_, "BeamSearch::step after done()");
    const int64_t vocab = scores.size(1);
    at::Tensor beam_scores = at::tensor(beam_scores_, at::TensorOptions().dtype(at::kFloat)).to(scores.device());
    at::Tensor flat = (scores + beam_scores.view({-1, 1})).view({1, num_beams_ * vocab});
    const int64_t eos_count = static_cast<int64_t>(eos_token_ids_.size());
    const int64_t keep = std::max<int64_t>(2, 1 + eos_count) * num_beams_;

    at::Tensor next_scores, next_tokens;
    if (do_sample_) {
        TORCH_CHECK(generator.defined(), "BeamSearch::step: beam sampling needs the request's generator");
        at::Tensor probs = flat.softmax(-1).cpu();
        next_tokens = at::multinomial(probs, keep, /*replacement=*/false, generator).to(flat.device());
        next_scores = flat.gather(-1, next_tokens);
        auto sorted = next_scores.sort(/*dim=*/1, /*descending=*/true);
        next_scores = std::get<0>(sorted);
        next_tokens = next_tokens.gather(-1, std::get<1>(sorted));
    } else {
        auto top = flat.topk(keep, /*dim=*/1, /*largest=*/true, /*sorted=*/true);
        next_scores = std::get<0>(top);
        next_tokens = std::get<1>(top);
    }
    next_scores = next_scores.cpu().contiguous();
    next_tokens = next_tokens.cpu().contiguous();
    const float* candidate_scores = next_scores.data_ptr<float>();
    const int64_t* candidate_ids = next_tokens.data_ptr<int64_t>();

    const int64_t cur_len = static_cast<int64_t>(beams[0].size()) + 1;
    Step out;
    std::vector<float> new_scores;
    for (int64_t rank = 0; rank < keep && static_cast<int64_t>(out.tokens.size()) < num_beams_; ++rank) {
        const int64_t source = candidate_ids[rank] / vocab;
        const int64_t token = candidate_ids[rank] % vocab;
        const bool is_eos = std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
        if (is_eos) {
            // Only an eos among the num_beams best candidates closes a hypothesis.
            if (rank >= num_beams_) continue;
            add(beams[static_cast<size_t>(source)], static_cast<double>(candidate_scores[rank]),
                cur_len - decoder_prompt_len_);
        } else {
            out.source.push_back(source);
            out.tokens.push_back(token);
            new_scores.push_back(candidate_scores[rank]);
        }
    }
    TORCH_CHECK(static_cast<int64_t>(out.tokens.size()) == num_beams_,
                "BeamSearch::step: too many candidates were eos to continue every beam");
    beam_scores_ = std::move(new_scores);
    done_ = is_done(static_cast<double>(candidate_scores[0]), cur_len);
    return out;
}

std::vector<BeamSearch::Result> BeamSearch::finalize(const std::vector<std::vector<int64_t>>& beams, int64_t count) {
    if (!done_) {
        for (int64_t b = 0; b < num_beams_ && b < static_cast<int64_t>(beams.size()); ++b)
            add(beams[static_cast<size_t>(b)], static_cast<double>(beam_scores_[static_cast<size_t>(b)]),
                static_cast<int64_t>(beams[static_cast<size_t>(b)].size()) - decoder_prompt_len_);
        done_ = true;
    }
    TORCH_CHECK(!hypotheses_.empty(), "BeamSearch::finalize without any hypothesis");
    // HF sorts by score (stable) and pops the last, count times: among equal scores the latest
    // added comes first.
    std::vector<size_t> order(hypotheses_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return hypotheses_[a].score < hypotheses_[b].score; });
    std::vector<Result> results;
    for (size_t k = 0; k < static_cast<size_t>(count) && k < order.size(); ++k) {
        const Hypothesis& h = hypotheses_[order[order.size() - 1 - k]];
        Result result{h.ids, h.score};
        // Hypotheses closed by eos were stored without it; HF writes eos after any shorter sequence.
        if (static_cast<int64_t>(result.ids.size()) < max_length_ && !eos_token_ids_.empty())
            result.ids.push_back(eos_token_ids_[0]);
        results.push_back(std::move(result));
    }
    return results;
}

}  // namespace lorascope::sampling
