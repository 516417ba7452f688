// Likelihood of a given target, as Hugging Face computes the loss when `labels` are passed.
#pragma once

#include <vector>

#include "lorascope/score.h"
#include "models/model.h"

namespace lorascope::models {

// The public API's result and ignore label (lorascope/score.h): Scorer returns this very value.
using lorascope::kIgnoreLabel;
using lorascope::ScoreResult;

// Seq2seq: `source` is the encoder input, `labels` the target; the decoder reads the labels shifted
// right behind the decoder start token (-100 read as pad) and every label except -100 is scored.
// Decoder-only: `source` is the prompt and `labels` the continuation scored given it (a -100 label
// is read as pad in the input, as in the seq2seq decoder input).
// Throws lorascope::Error (InvalidArgument) when nothing can be scored.
ScoreResult score(const Model& model, const std::vector<int64_t>& source, const std::vector<int64_t>& labels,
                  const LoraHook* lora = nullptr);

}  // namespace lorascope::models
