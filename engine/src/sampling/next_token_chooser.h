// Choosing each row's next token from its processed scores: argmax for greedy rows, a draw from
// softmax(scores) for sampling rows, each with the row's own generator.
//
// Reproducibility: a sampling row draws only from its own at::Generator (a CPU generator seeded
// with the request's seed), with torch.multinomial on that row alone, so its tokens depend on its
// seed and its scores, never on its neighbours in the batch. A single request with seed S draws
// exactly what transformers does after torch.manual_seed(S) on CPU. Rows on a CUDA device are
// copied to the CPU for the draw so that a seed means the same thing on every device.
//
// Logprobs: the log-probability of the chosen token under log_softmax of the *processed* scores
// (after repetition penalty, n-gram blocking and, when sampling, temperature and truncation), i.e.
// the distribution the token was actually chosen from (HF's output_scores, normalised).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "sampling/logits_processor.h"

namespace lorascope::sampling {

// Equivalent to torch.manual_seed(seed) on a private CPU generator.
at::Generator make_request_generator(uint64_t seed);

struct TokenChoice {
    int64_t token_id = 0;
    float logprob = 0.0f;   // NaN unless the row needs logprobs (ResolvedGenerationParams::needs_logprobs)
    std::string error;      // non-empty: no token for this row (its distribution was not one)
};

// scores: processed [rows, vocab] fp32. generators[r] must be defined for rows with do_sample.
// A sampling row whose probabilities are not a distribution (NaN, inf, all zero) gets `error`
// instead of a token, and the other rows draw as if it were not there: torch.multinomial checks
// its input before it touches the generator, so a failed row leaves every generator as it was.
std::vector<TokenChoice> choose_next_tokens(const at::Tensor& scores, const std::vector<LogitsRow>& rows,
                                            const std::vector<at::Generator>& generators);

}  // namespace lorascope::sampling
