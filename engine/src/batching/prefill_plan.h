// Which prompt work one engine step does: the per-step prefill budget that keeps running rows
// decoding every step instead of waiting while newcomers are prefilled whole.
//
// Work is taken first come, first served. Decoder-only prompts are cut into chunks of `chunk`
// tokens (a request's chunk boundaries are multiples of `chunk`, whatever its neighbours, so its
// numbers do not depend on them); an encoder pass cannot be cut, so a seq2seq prompt is one piece.
// Pieces are taken while they fit the budget; the first piece is always taken, so that a prompt
// longer than the budget still makes progress, and the first piece that does not fit ends the
// plan (no overtaking: a long prompt is not starved by short ones behind it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lorascope::batching {

struct PrefillPiece {
    size_t index = 0;     // into the `remaining` vector
    int64_t tokens = 0;
};

struct PrefillPlan {
    std::vector<PrefillPiece> pieces;
    int64_t tokens = 0;      // prompt tokens computed this step
    int64_t deferred = 0;    // prompt tokens that wait for later steps
};

// remaining[i]: prompt tokens request i (in queue order) still needs. budget <= 0: no limit.
// `force_first` false: the first piece too is taken only when it fits (a latency target, under
// which a piece that does not fit waits for rows to leave; budget 0 then means none).
PrefillPlan plan_prefill(const std::vector<int64_t>& remaining, bool chunked, int64_t chunk, int64_t budget,
                         bool force_first = true);

}  // namespace lorascope::batching
