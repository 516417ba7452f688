// Beam search bookkeeping for one request whose beams live as consecutive rows of the batch,
// following transformers 4.46 (GenerationMixin._beam_search with BeamSearchScorer and
// BeamHypotheses): candidates are the top max(2, 1 + #eos) * num_beams of
// log_softmax(logits) -> processors -> + beam score, over all beams at once (or drawn without
// replacement when beams sample); an eos candidate among the first num_beams ends a hypothesis
// scored sum_logprobs / generated_len ** length_penalty; early_stopping true / false / "never"
// decide when no open beam can beat the finished ones.
//
// Per step the engine: takes the request's rows of logits, applies log_softmax, runs
// apply_logits_processors (and apply_logits_warpers when sampling) with each beam's ids, calls
// step(), reorders the rows' caches by Step::source, appends Step::tokens, and finishes the request
// when done() or when the ids reach max_length; then finalize() gives the result.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "lorascope/params.h"

namespace lorascope::sampling {

class BeamSearch {
public:
    // decoder_prompt_len: length of each beam's ids when generation begins (prompt for decoder-only
    // models, 1 for encoder-decoder ones). max_length: decoder_prompt_len + max_new_tokens.
    BeamSearch(const ResolvedGenerationParams& params, int64_t decoder_prompt_len, int64_t max_length);

    int64_t num_beams() const { return num_beams_; }

    struct Step {
        std::vector<int64_t> source;   // row (0..num_beams-1) each new beam continues
        std::vector<int64_t> tokens;   // the token it appends
    };
    // scores: [num_beams, vocab] fp32 processed log-probabilities of this request's rows.
    // beams: each row's current ids (all the same length). generator: used only when sampling.
    Step step(const at::Tensor& scores, const std::vector<std::vector<int64_t>>& beams,
              const at::Generator& generator = at::Generator());

    // No open beam can improve on the finished hypotheses any more.
    bool done() const { return done_; }

    struct Result {
        std::vector<int64_t> ids;   // the beam's full ids, with eos appended when it ended on eos
        double score = 0;           // sum_logprobs / generated_len ** length_penalty
    };
    // The best `count` hypotheses, best first (transformers' num_beam_hyps_to_keep); `beams` are
    // the rows' ids at the end (used when not done()). count is at most num_beams.
    std::vector<Result> finalize(const std::vector<std::vector<int64_t>>& beams, int64_t count = 1);

private:
    struct Hypothesis {
        double score;
        std::vector<int64_t> ids;
    };
    void add(std::vector<int64_t> ids, double sum_logprobs, int64_t generated_len);
    bool is_done(double best_sum_logprobs, int64_t cur_len) const;

    int64_t num_beams_;
    double length_penalty_;
    EarlyStopping early_stopping_;
    bool do_sample_;
    std::vector<int64_t> eos_token_ids_;
    int64_t decoder_prompt_len_;
    int64_t max_length_;
    std::vector<float> beam_scores_;
    std::vector<Hypothesis> hypotheses_;
    double worst_score_ = 1e9;
    bool done_ = false;
};

}  // namespace lorascope::sampling
