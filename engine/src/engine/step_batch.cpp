#include "engine/step_batch.h"

#include <algorithm>

namespace lorascope::engine_detail {

StepBatch::StepBatch(const std::vector<std::unique_ptr<LiveRequest>>& running, const models::DecodeState& state) {
    std::vector<int64_t> last;
    for (const auto& r : running) {
        first_row_.push_back(static_cast<int64_t>(rows_.size()));
        requests_.push_back(r.get());
        last.clear();
        r->append_last_tokens(last);
        for (size_t j = 0; j < last.size(); ++j) {
            const int64_t index = static_cast<int64_t>(rows_.size());
            const auto& cache = state.row(index);
            StepRow row;
            row.request = r.get();
            row.token = last[j];
            row.kv_blocks = static_cast<int64_t>(cache.self.blocks.size() + cache.cross.blocks.size());
            row.joined = r->joined_this_step;
            rows_.push_back(row);
        }
    }
    TORCH_CHECK(static_cast<int64_t>(rows_.size()) == state.rows(), "StepBatch: ", rows_.size(),
                " request rows for a cache of ", state.rows());
}

std::vector<RequestId> StepBatch::ids(size_t first, size_t last) const {
    std::vector<RequestId> out;
    for (size_t i = first; i < last; ++i) out.push_back(requests_[i]->id);
    return out;
}

at::Tensor StepBatch::tokens(int64_t begin, int64_t n, const at::Device& device) const {
    std::vector<int64_t> ids;
    ids.reserve(static_cast<size_t>(n));
    for (int64_t i = begin; i < begin + n; ++i) ids.push_back(rows_[static_cast<size_t>(i)].token);
    at::Tensor t = at::tensor(ids, at::TensorOptions().dtype(at::kLong));
    return device.is_cpu() ? t : t.to(device);
}

adapters::MultiLoraHook StepBatch::lora_hook(int64_t begin, int64_t n, const at::Device& device,
                                             adapters::LoraStack* stack) const {
    std::vector<std::shared_ptr<const adapters::LoraWeights>> weights;
    weights.reserve(static_cast<size_t>(n));
    for (int64_t i = begin; i < begin + n; ++i) weights.push_back(rows_[static_cast<size_t>(i)].request->adapter.weights());
    return adapters::MultiLoraHook(weights, device, stack);
}

void StepBatch::count(StepStats& stats) const {
    stats.rows += static_cast<int64_t>(rows_.size());
    // A decode step computes exactly one position per row: no padded positions.
    stats.decode_tokens += static_cast<int64_t>(rows_.size());
    for (const auto& row : rows_) {
        stats.row_requests.push_back(row.request->id);
        stats.row_prefill.push_back(row.joined);
        stats.row_kv_blocks.push_back(row.kv_blocks);
        const std::string& name = row.request->adapter_name;
        auto it = std::find_if(stats.rows_per_adapter.begin(), stats.rows_per_adapter.end(),
                               [&](const auto& entry) { return entry.first == name; });
        if (it == stats.rows_per_adapter.end()) {
            stats.rows_per_adapter.emplace_back(name, 1);
        } else {
            ++it->second;
        }
    }
}

}  // namespace lorascope::engine_detail
