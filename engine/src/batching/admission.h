// Which waiting requests join the running batch at a step boundary.
//
// Cost model: a batch may grow to `rows x (longest prompt + largest max_new_tokens)` positions,
// padding included, so that is what the token budget is charged. Admission is first come, first
// served; a request that does not fit *now* is passed over for at most `max_skips` steps (later,
// smaller requests may go ahead of it), after which nothing behind it is admitted until it fits.
// A request that could never fit (alone it exceeds the budget, the row limit or the whole KV cache),
// or whose demand is malformed, is rejected. The KV cache is charged what each request may occupy at most (its blocks are
// reserved at admission), so a running batch never runs out of cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <climits>
#include <deque>
#include <vector>

namespace lorascope::batching {

struct Demand {
    uint64_t id = 0;
    int64_t rows = 1;            // beams occupy one row each
    int64_t prompt_tokens = 0;   // encoder (seq2seq) or prompt (causal) length
    int64_t max_new_tokens = 0;
    int64_t skipped = 0;         // how many admissions passed it over (maintained by admit())
    int64_t kv_blocks = 0;       // KV-cache blocks it may occupy (models::KvPool blocks)
    int64_t intake = 0;          // the step boundary at which it arrived (requests of one arrived together)
};

struct BatchShape {
    int64_t rows = 0;
    int64_t max_prompt_tokens = 0;
    int64_t max_new_tokens = 0;

    // Saturates at INT64_MAX instead of wrapping: a cost past any budget never fits.
    int64_t cost() const;
    BatchShape with(const Demand& d) const;
};

struct Limits {
    int64_t max_batch_size = 32;
    int64_t max_batch_tokens = 16384;
    int64_t max_skips = 8;
    int64_t kv_blocks_free = INT64_MAX;      // unreserved blocks of the cache now
    int64_t kv_blocks_capacity = INT64_MAX;  // all blocks of the cache
    // Rows the batch may hold at this step boundary (a latency target, batching/time_budget.h):
    // soft, unlike max_batch_size: what does not fit waits, nothing is rejected for it, and the
    // first request into an empty batch is always let in.
    int64_t rows_now = INT64_MAX;
};

struct AdmissionResult {
    std::vector<uint64_t> admitted;   // in queue order
    std::vector<uint64_t> rejected;   // can never fit: fail them with a clear error
};

// Removes admitted and rejected demands from `queue`; `running` is the batch already on the engine.
AdmissionResult admit(std::deque<Demand>& queue, const BatchShape& running, const Limits& limits);

// The order in which `queue` should be offered to admit() under QueueOrder::Pack, as indices into
// it: each run of requests of one intake (arrived at one step boundary) by max_new_tokens, ties in
// arrival order. While more rows wait than `rows` (the batch's), shortest first: the most answers
// finish soonest (shortest job first; on W6's T5, 128 at once, the median first token came at
// 0.41x static's instead of 0.88x, docs/benchmarks.md). Once they fit in `rows`, every one of
// them joins as running rows leave: they are the batch's end, and join longest first, so that its
// last steps decode short requests rather than one long request beside rows left empty (W6's
// BLOOM: 225 -> 161 steps). Requests of different intakes keep their order, so a request is only
// passed by those that arrived with it: none starves.
// `end_longest_first` false (under a latency target): the end joins shortest first too. Longest
// first, the batch's last steps hold all its rows at their longest contexts, and a step's time grows
// with the keys it reads (W6's BLOOM on the Zen 4: ~0.07 ms per 16-position block at 32 rows; the
// packed end reached 336 blocks, static's heaviest 32-row step 169): those steps ran 7-15% past
// static's per-token p95, which a target equal to it cannot absorb. Paired rounds at that target
// (docs/benchmarks.md, issue 33): per-token p95 / target, median, BLOOM 1.119 -> 1.049 (4 rounds;
// tokens/s 1.065x -> 1.042x static's), T5 1.113 -> 1.083 (5; 0.983x -> 1.000x).
// `prompt_weight`: what a prompt token weighs against a token to decode in the shortest-first part,
// which sorts by max_new_tokens + prompt_weight x prompt_tokens. A request's prompt is prefilled
// while every running row waits, so a prompt token costs the queue behind it about
// rows x (a prompt token's prefill) / (a full step) decoding tokens (BatchRunner::prompt_weight:
// measured 0.33 on W6's BLOOM, the Zen 4; 0 for an encoder-decoder). Sorted by new tokens alone, a
// batch's first wave held its longest prompts as often as its shortest, and the TTFT of all of it
// waited for them: BLOOM, 64 requests of 32-512 prompt and 8-128 new tokens at once, 3 paired
// rounds (docs/benchmarks.md, issue 33): TTFT p50 0.593x -> 0.349x static's, mean TTFT 0.638x ->
// 0.618x, tokens/s 1.051x -> 1.057x. On W6's narrower prompts (8-128) it moved within the noise.
// The end joins by max_new_tokens alone (what it packs is the steps its rows decode). 0: by
// max_new_tokens alone.
std::vector<size_t> packed_order(const std::vector<Demand>& queue, int64_t rows, bool end_longest_first = true,
                                 double prompt_weight = 0);

// True when `d` alone can never be admitted under `limits`.
bool never_fits(const Demand& d, const Limits& limits);

// A demand with a negative field (rows < 1, negative lengths or blocks). The engine checks every
// request's budget at submit (check_request_budget), so this is a bug upstream: debug builds stop
// at it (assert), release builds reject that request with an error, rather than let a negative
// cost admit it or a negative reservation corrupt the KV accounting for every later request.
bool malformed(const Demand& d);

}  // namespace lorascope::batching
