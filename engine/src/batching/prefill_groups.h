// How the requests admitted in one step are split into prefill passes.
//
// A prefill pass pads every prompt to the longest one in it, and padded positions cost as much as
// real ones (a t5-small batch of 32 prompts of 8..128 tokens computed ~45% padding in its encoder).
// Splitting the newcomers into passes of similar length removes most of that, at the price of
// reading the weights once more per pass. All passes run in the same step, so admission order,
// fairness and the step a request joins are unchanged; only the compute is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lorascope::batching {

// `per_pass_tokens`: what one extra pass costs, in prompt positions (reading the weights and the
// LM head once more). Returns indices into `prompt_tokens` (of requests with `rows` rows each),
// one vector per pass, shortest prompts first; the passes minimise
//   sum over passes (rows in pass x longest prompt in pass) + passes x per_pass_tokens
// among the splits whose passes hold at most `max_pass_positions` padded positions (rows x
// longest) each, a request alone excepted; 0: no limit. A pass's activations grow with its
// padded positions, so the limit bounds prefill memory whatever the number of newcomers.
std::vector<std::vector<size_t>> prefill_groups(const std::vector<int64_t>& prompt_tokens,
                                                const std::vector<int64_t>& rows, int64_t per_pass_tokens,
                                                int64_t max_pass_positions = 0);

}  // namespace lorascope::batching
