// A request's prompt log-probabilities (params.prompt_logprobs; LoRAX's decoder_input_details):
// one pass of the loss path (models/score.h) with the request's adapter, run on the engine thread
// when the request is admitted. Decoder-only: every prompt token given the ones before it, as a
// forward pass over the prompt gives them (the first token has none); encoder-decoder: every token
// of the request's target under teacher forcing. The pass is its own (outside the per-step prefill
// budget and the KV cache): it is as long as the prompt, once per request that asks.
#pragma once

#include "engine/live_request.h"
#include "lorascope/tokenizer.h"
#include "models/model.h"

namespace lorascope::engine_detail {

// Fills request.prompt_logprobs and sets prompt_scored. Throws what the model pass throws.
void score_prompt(LiveRequest& request, const models::Model& model, const Tokenizer* tokenizer);

}  // namespace lorascope::engine_detail
