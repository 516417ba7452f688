// The LoraHook of one batch call: each row names the adapter it uses (or none), rows of the same
// adapter are computed together, and rows without an adapter cost nothing.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "adapters/lora_weights.h"
#include "models/linear.h"

namespace lorascope::adapters {

// The A and B factors of several adapters stacked per site, for decoding steps that mix adapters
// off the CPU's float32 path (the CPU runs lora_kernels.h): one [sum of ranks, in] and one
// [sum of ranks, out] matrix per site instead of one pair per adapter.
// The engine keeps one across steps (a running batch's set of adapters rarely changes); a different
// set drops the stacks. Engine thread only.
class LoraStack {
public:
    struct Site {
        at::Tensor a;                // [sum r, in]: the adapters' A one under the other
        at::Tensor bt;               // [sum r, out]: their scaled, transposed B one under the other
        std::vector<int64_t> offset; // per adapter (in set order): first column of its rank block
        std::vector<int64_t> rank;   // per adapter: 0 when it does not target the site
    };

    // Makes `adapters` (any order, no duplicates) the stacked set; returns each one's index in the
    // set. Stacks built for another set are dropped. The caller keeps the adapters alive while it
    // uses site(); between calls the stack holds no reference, so unloaded adapters are freed.
    std::vector<size_t> bind(const std::vector<std::shared_ptr<const LoraWeights>>& adapters);
    // The stacks of one site for the bound set, built on first use; nullptr when no adapter of the
    // set targets it.
    const Site* site(int site_id);
    void clear();
    int64_t bytes() const { return bytes_; }

private:
    std::vector<const LoraWeights*> set_;                  // sorted by address
    std::vector<std::weak_ptr<const LoraWeights>> bound_;  // what the stacks were built from
    std::unordered_map<int, Site> sites_;
    std::unordered_set<int> absent_;       // sites no adapter of the set targets
    int64_t bytes_ = 0;
};

class MultiLoraHook final : public models::LoraHook {
public:
    // row_adapters[b] is the adapter of batch row b, nullptr for the base model. The hook keeps
    // the weights alive for its own lifetime. `stack` (optional, outliving the hook; the engine
    // passes its own for decoding steps) serves calls with few rows from several adapters off the
    // CPU's float32 path; a hook over fewer than two adapters clears it.
    // `cpu_loop` false keeps CPU calls off our kernels (tests use it to reach the stack and the
    // per-adapter products).
    MultiLoraHook(const std::vector<std::shared_ptr<const LoraWeights>>& row_adapters, const at::Device& device,
                  LoraStack* stack = nullptr, bool cpu_loop = true);

    // True when no row uses an adapter: callers pass nullptr instead of this hook.
    bool empty() const { return groups_.empty(); }
    size_t group_count() const { return groups_.size(); }

    void add_delta(const models::LinearSite& site, const at::Tensor& x, at::Tensor y) const override;

    // Calls on the CPU in float32 go through our own kernels (lora_kernels.h), in one parallel
    // loop over the adapters' positions, whatever their size. Elsewhere, calls with at most this
    // many positions (rows x tokens: decoding steps) go through the stack, if one was given (two
    // products per site, instead of a gather, two products and a scatter per adapter); longer
    // calls (prefill) keep the per-adapter products, where those costs are amortised.
    static constexpr int64_t kSmallCallPositions = 64;
    // How many add_delta calls took the CPU loop (for tests).
    int64_t cpu_position_calls() const { return cpu_position_calls_; }

private:
    // The rows of one adapter: a contiguous run [start, start + count) is sliced; scattered rows
    // are gathered with index_select and scattered back with index_add_.
    struct Group {
        std::shared_ptr<const LoraWeights> weights;
        std::vector<int64_t> row_list;
        mutable at::Tensor rows;  // int64 on the model's device, when not contiguous; made on first use
        int64_t start = 0;
        int64_t count = 0;
        bool contiguous = false;
        size_t stack_index = 0;  // this adapter's index in the bound LoraStack
    };
    void add_grouped(const models::LinearSite& site, const at::Tensor& x, at::Tensor& y) const;
    void add_stacked(const models::LinearSite& site, const at::Tensor& x, at::Tensor& y) const;
    bool add_positions_cpu(const models::LinearSite& site, const at::Tensor& x, at::Tensor& y, bool small) const;

    std::vector<Group> groups_;
    int64_t batch_rows_ = 0;
    LoraStack* stack_ = nullptr;
    bool cpu_loop_ = true;
    mutable int64_t cpu_position_calls_ = 0;
};

}  // namespace lorascope::adapters
