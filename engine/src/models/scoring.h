// Likelihood of a given target, as Hugging Face computes the loss when `labels` are passed.
#pragma once

#include <optional>
#include <vector>

#include "models/model.h"

namespace lorascope::models {

struct ScoreResult {
    double loss = 0.0;                                 // mean cross-entropy over scored tokens
    std::vector<std::optional<double>> token_logprobs; // one per label; empty where not scored
    int64_t scored_tokens = 0;
};

inline constexpr int64_t kIgnoreLabel = -100;

// Seq2seq: `source` is the encoder input, `labels` the target; the decoder reads the labels shifted
// right behind the decoder start token (-100 read as pad) and every label except -100 is scored.
// Decoder-only: `source` is the prompt and `labels` the continuation scored given it (a -100 label
// is read as pad in the input, as in the seq2seq decoder input).
// Throws lorascope::Error (InvalidArgument) when nothing can be scored.
ScoreResult score(const Model& model, const std::vector<int64_t>& source, const std::vector<int64_t>& labels,
                  const LoraHook* lora = nullptr);

}  // namespace lorascope::models
