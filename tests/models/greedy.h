// A reference greedy decoder for the parity test: a static batch, each row stopping at eos the way
// Hugging Face's generate() does (eos included in the output), with the generation config's forced
// BOS/EOS tokens and one-token bad words. It drives the Model calls directly, without the engine's batching and sampling.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/model.h"

namespace lorascope::test {

using models::LoraHook;
using models::Model;
using models::TokenBatch;

struct GreedyRequest {
    std::vector<int64_t> prompt;      // encoder input (seq2seq) or prompt (decoder-only)
    int64_t max_new_tokens = 20;
};

struct GreedyOutput {
    std::vector<int64_t> tokens;      // generated ids, without the decoder start token
    std::string finish_reason;        // "eos" or "length"
};

struct GreedyOptions {
    std::vector<int64_t> eos_token_ids;
    std::optional<int64_t> forced_bos_token_id;   // at the first generated position
    std::optional<int64_t> forced_eos_token_id;   // at the last position max_new_tokens allows
    // The one-token bad_words_ids of the generation config (Marian bans its pad), never chosen.
    std::vector<int64_t> banned_token_ids;
    const LoraHook* lora = nullptr;
    // Drop finished rows from the batch as they finish (exercises DecodeState::filter).
    bool drop_finished_rows = true;

    static GreedyOptions from_model(const Model& model);
};

// All requests in one padded batch. Every row's tokens equal those of running it alone.
std::vector<GreedyOutput> greedy_generate(const Model& model, const std::vector<GreedyRequest>& requests,
                                          const GreedyOptions& options);

}  // namespace lorascope::test
