// The row table of one decoding step, in the spirit of llama.cpp's llama_ubatch: built once per
// step from the running requests and read by everyone who needs to know what a row is: the model
// (its tokens), the LoRA hook (its adapter), the sampler (its request), the statistics
// and the drop step (its request's row range).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "adapters/multi_lora_hook.h"
#include "engine/live_request.h"
#include "lorascope/engine.h"
#include "models/kv_pool.h"

namespace lorascope::engine_detail {

struct StepRow {
    LiveRequest* request = nullptr;
    int64_t token = 0;        // the token it feeds the model
    int64_t kv_blocks = 0;    // blocks its cache references
    bool joined = false;      // its request joined the batch in this step
};

class StepBatch {
public:
    // One row per running request's row, in batch order (the state's rows).
    StepBatch(const std::vector<std::unique_ptr<LiveRequest>>& running, const models::DecodeState& state);

    const std::vector<StepRow>& rows() const { return rows_; }
    size_t request_count() const { return requests_.size(); }
    LiveRequest& request(size_t i) const { return *requests_[i]; }
    int64_t first_row(size_t i) const { return i < first_row_.size() ? first_row_[i] : static_cast<int64_t>(rows_.size()); }
    std::vector<RequestId> ids(size_t first, size_t last) const;

    // Tokens of rows [begin, begin + n) on `device`.
    at::Tensor tokens(int64_t begin, int64_t n, const at::Device& device) const;
    // The LoRA hook for rows [begin, begin + n).
    adapters::MultiLoraHook lora_hook(int64_t begin, int64_t n, const at::Device& device,
                                      adapters::LoraStack* stack) const;
    // Rows, decode tokens, and the per-row and per-adapter views of the step.
    void count(StepStats& stats) const;

private:
    std::vector<StepRow> rows_;
    std::vector<LiveRequest*> requests_;
    std::vector<int64_t> first_row_;
};

}  // namespace lorascope::engine_detail
