// The most likely tokens at a generated position (params.top_alternatives; LoRAX's
// return_k_alternatives, OpenAI's top_logprobs): torch.topk of log_softmax of the processed
// scores, the distribution the chosen token was drawn from (Hugging Face's output_scores), so that
// the chosen token's own logprob is among them whenever it ranks in the top k.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "sampling/logits_processor.h"

namespace lorascope::sampling {

struct Alternative {
    int64_t token_id = 0;
    float logprob = 0.0f;
};

// scores: processed [rows, vocab] fp32, as choose_next_tokens reads them. For each row whose
// params ask for k > 0 alternatives: its k best, most likely first (torch.topk's order on ties),
// without tokens a processor ruled out (-inf), so a row may get fewer than k. Empty for the others.
std::vector<std::vector<Alternative>> top_alternatives(const at::Tensor& scores, const std::vector<LogitsRow>& rows);

}  // namespace lorascope::sampling
