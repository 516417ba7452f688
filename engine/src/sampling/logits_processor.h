// Hugging Face's logits processors and warpers (transformers 4.46), applied per batch row with
// each row's own parameters, in the order GenerationMixin._get_logits_processor builds them:
//   repetition penalty, no-repeat n-gram, bad words, min length / min new tokens (eos -> -inf),
//   forced BOS (first step), forced EOS (last step)            -- always
//   temperature, top-k, top-p, min-p, typical-p               -- only for rows with do_sample
//   log_softmax (LogitNormalization)                           -- rows with renormalize_logits
// Rows whose parameters agree are processed together; a processor whose parameters are neutral
// for a row (penalty 1, top_p 1, ...) skips that row, and one that is neutral for every row
// costs nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "lorascope/params.h"

namespace at { class Tensor; }

namespace lorascope::sampling {

// One batch row as the processors see it.
struct LogitsRow {
    const ResolvedGenerationParams* params = nullptr;
    // What Hugging Face's `input_ids` hold for this row at this step: prompt + generated ids for
    // decoder-only models, decoder start token + generated ids for encoder-decoder models
    // (repetition penalty and n-gram blocking then see exactly what HF's see). Never empty.
    const std::vector<int64_t>* input_ids = nullptr;
    // Length of input_ids when generation began (prompt length, or 1 for encoder-decoder):
    // min/max lengths and forced EOS count from it.
    int64_t input_ids_length = 0;
};

// HF keeps more candidates when beams sample: one per eos id plus one (at least 2).
int64_t min_tokens_to_keep(const ResolvedGenerationParams& params);

// In place on `scores` ([rows, vocab], fp32, contiguous, any device); rows.size() == scores.size(0).
void apply_logits_processors(at::Tensor& scores, const std::vector<LogitsRow>& rows);
void apply_logits_warpers(at::Tensor& scores, const std::vector<LogitsRow>& rows);
// LogitNormalization, which HF appends after every other processor when renormalize_logits is set.
void renormalize_logits(at::Tensor& scores, const std::vector<LogitsRow>& rows);

// All three, in HF's order: the scores a token is chosen from.
void process_logits(at::Tensor& scores, const std::vector<LogitsRow>& rows);

}  // namespace lorascope::sampling
