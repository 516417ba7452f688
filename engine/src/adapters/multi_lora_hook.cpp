#include "adapters/multi_lora_hook.h"

#include <map>

namespace lorascope::adapters {

MultiLoraHook::MultiLoraHook(const std::vector<std::shared_ptr<const LoraWeights>>& row_adapters,
                             const at::Device& device)
    : batch_rows_(static_cast<int64_t>(row_adapters.size())) {
    std::map<const LoraWeights*, size_t> index;
    for (size_t b = 0; b < row_adapters.size(); ++b) {
        const auto& w = row_adapters[b];
        if (!w) continue;
        auto [it, fresh] = index.emplace(w.get(), groups_.size());
        if (fresh) {
            groups_.emplace_back();
            groups_.back().weights = w;
        }
        groups_[it->second].row_list.push_back(static_cast<int64_t>(b));
    }
    for (auto& g : groups_) {
        g.count = static_cast<int64_t>(g.row_list.size());
        g.start = g.row_list.front();
        g.contiguous = g.row_list.back() - g.start + 1 == g.count;
        if (!g.contiguous) g.rows = at::tensor(g.row_list, at::TensorOptions().dtype(at::kLong)).to(device);
    }
}

void MultiLoraHook::add_delta(const models::LinearSite& site, const at::Tensor& x, at::Tensor y) const {
    TORCH_CHECK(x.size(0) == batch_rows_, "MultiLoraHook: built for ", batch_rows_, " rows, called with ", x.size(0));
    for (const auto& g : groups_) {
        const SiteDelta* d = g.weights->at_site(site.id);
        if (!d) continue;
        if (g.contiguous) {
            at::Tensor xs = g.count == batch_rows_ ? x : x.narrow(0, g.start, g.count);
            at::Tensor ys = g.count == batch_rows_ ? y : y.narrow(0, g.start, g.count);
            ys.add_(at::matmul(at::matmul(xs, d->a_t), d->b_t));
        } else {
            at::Tensor delta = at::matmul(at::matmul(x.index_select(0, g.rows), d->a_t), d->b_t);
            y.index_add_(0, g.rows, delta);
        }
    }
}

}  // namespace lorascope::adapters
