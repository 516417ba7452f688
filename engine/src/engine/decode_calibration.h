// What a decoding step costs before any request has decoded: under a time-per-token target the
// first wave is admitted before the decode fit (batching/step_costs.h) has a sample, and rows
// cannot be sent back once admitted. Without a measure the row limit was the batch size, so a
// first wave whose 32-row step passed the target decoded over it for its whole life (W6's BLOOM,
// a round on the Xeon whose machine ran slower than in the static run that set the target:
// per-token p95 1.34x the target). Admitting half the batch as a probe and growing from its
// measured step cost the prefill that an idle step does for free: the growth steps prefilled
// beside decoding rows, spent the tail share (time_budget.h) and left the second wave waiting
// (W6's BLOOM at a 160 ms target: TTFT p50 12.5 s against 3.7 s, tokens/s 0.80x). So the engine
// times throwaway decoding steps, of one row and of a full batch, when it starts; they stand in for
// the fit until its first sample (StepCosts::decode_prior). docs/benchmarks.md, issue 33.
#pragma once

#include <cstdint>

#include "batching/step_costs.h"
#include "models/model.h"

namespace lorascope::engine_detail {

// Decoding steps of `rows` rows after one-token prompts (a cache of its own, no adapter, the
// calling thread's compute threads), in ms: the median of a few, after one that pays for the first
// touch of the cache and the kernels' buffers (decode_calibration.cpp says why a median).
double time_decode_step(const models::Model& model, int64_t rows);

// Adds a step of 1 row and one of `max_rows` to `fit`: two sizes give it a slope and a fixed cost
// (one sample alone predicts proportionally).
void calibrate_decode(const models::Model& model, int64_t max_rows, batching::CostFit& fit);

}  // namespace lorascope::engine_detail
