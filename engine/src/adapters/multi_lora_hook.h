// The LoraHook of one batch call: each row names the adapter it uses (or none), rows of the same
// adapter are computed together, and rows without an adapter cost nothing.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "adapters/lora_weights.h"
#include "models/linear.h"

namespace lorascope::adapters {

class MultiLoraHook final : public models::LoraHook {
public:
    // row_adapters[b] is the adapter of batch row b, nullptr for the base model. The hook keeps
    // the weights alive for its own lifetime.
    MultiLoraHook(const std::vector<std::shared_ptr<const LoraWeights>>& row_adapters, const at::Device& device);

    // True when no row uses an adapter: callers pass nullptr instead of this hook.
    bool empty() const { return groups_.empty(); }
    size_t group_count() const { return groups_.size(); }

    void add_delta(const models::LinearSite& site, const at::Tensor& x, at::Tensor y) const override;

private:
    // The rows of one adapter: a contiguous run [start, start + count) is sliced; scattered rows
    // are gathered with index_select and scattered back with index_add_.
    struct Group {
        std::shared_ptr<const LoraWeights> weights;
        std::vector<int64_t> row_list;
        at::Tensor rows;       // int64 on the model's device, when not contiguous
        int64_t start = 0;
        int64_t count = 0;
        bool contiguous = false;
    };
    std::vector<Group> groups_;
    int64_t batch_rows_ = 0;
};

}  // namespace lorascope::adapters
