#include "adapters/multi_lora_hook.h"

#include <algorithm>
#include <map>

#include "adapters/lora_kernels.h"
#include "ops/thread_pool.h"

namespace lorascope::adapters {

namespace {

// Items differ by up to 8x in cost (W4's ranks run from 8 to 64), and parallel_for would hand
// each thread a contiguous run of them: W4's batch lists its adapters by rank, so one thread got
// 72% of the work (1.87 ms a step against 1.40 ms balanced, in a microbenchmark of W4's 36
// decoding sites with the factors read from memory). Longest first, each to the least loaded of
// at most `threads` bins; none is empty.
std::vector<std::vector<size_t>> balance(const std::vector<int64_t>& costs, int threads) {
    const size_t bins_n = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), costs.size()));
    std::vector<size_t> order(costs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t p, size_t q) { return costs[p] > costs[q]; });
    std::vector<std::vector<size_t>> bins(bins_n);
    std::vector<int64_t> load(bins_n, 0);
    for (size_t i : order) {
        const auto t = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        bins[t].push_back(i);
        load[t] += costs[i];
    }
    return bins;
}

}  // namespace

std::vector<size_t> LoraStack::bind(const std::vector<std::shared_ptr<const LoraWeights>>& adapters) {
    std::vector<std::shared_ptr<const LoraWeights>> set = adapters;
    std::sort(set.begin(), set.end(), [](const auto& a, const auto& b) { return a.get() < b.get(); });
    // The same set as the stacks were built from, alive: keep them. A set whose adapter was freed
    // and another allocated at its address fails the weak_ptr check.
    bool same = set.size() == bound_.size();
    for (size_t i = 0; same && i < set.size(); ++i) same = bound_[i].lock() == set[i];
    if (!same) {
        clear();
        bound_.assign(set.begin(), set.end());
    }
    set_.clear();
    for (const auto& a : set) set_.push_back(a.get());
    std::vector<size_t> index;
    for (const auto& a : adapters)
        index.push_back(static_cast<size_t>(std::lower_bound(set_.begin(), set_.end(), a.get()) - set_.begin()));
    return index;
}

void LoraStack::clear() {
    sites_.clear();
    absent_.clear();
    bound_.clear();
    set_.clear();
    bytes_ = 0;
}

const LoraStack::Site* LoraStack::site(int site_id) {
    if (auto it = sites_.find(site_id); it != sites_.end()) return &it->second;
    if (absent_.count(site_id)) return nullptr;
    Site s;
    std::vector<at::Tensor> as, bts;
    int64_t offset = 0;
    for (const LoraWeights* w : set_) {
        const SiteDelta* d = w->at_site(site_id);
        s.offset.push_back(offset);
        s.rank.push_back(d ? d->rank : 0);
        if (!d) continue;
        as.push_back(d->a);
        bts.push_back(d->bt);
        offset += d->rank;
    }
    if (as.empty()) {
        absent_.insert(site_id);
        return nullptr;
    }
    s.a = at::cat(as, 0).contiguous();
    s.bt = at::cat(bts, 0).contiguous();
    bytes_ += static_cast<int64_t>(s.a.nbytes() + s.bt.nbytes());
    return &sites_.emplace(site_id, std::move(s)).first->second;
}

MultiLoraHook::MultiLoraHook(const std::vector<std::shared_ptr<const LoraWeights>>& row_adapters,
                             const at::Device& device, LoraStack* stack, bool cpu_loop)
    : batch_rows_(static_cast<int64_t>(row_adapters.size())), stack_(stack), cpu_loop_(cpu_loop) {
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
        // The index tensor of the per-adapter products; the CPU's own kernels take row_list.
        if (!g.contiguous && !(device.is_cpu() && cpu_loop_))
            g.rows = at::tensor(g.row_list, at::TensorOptions().dtype(at::kLong)).to(device);
    }
    if (stack_ && groups_.size() < 2) {
        stack_->clear();  // the batch no longer mixes adapters
        stack_ = nullptr;
    }
    if (stack_) {
        std::vector<std::shared_ptr<const LoraWeights>> adapters;
        for (const auto& g : groups_) adapters.push_back(g.weights);
        const auto where = stack_->bind(adapters);
        for (size_t i = 0; i < groups_.size(); ++i) groups_[i].stack_index = where[i];
    }
}

void MultiLoraHook::add_delta(const models::LinearSite& site, const at::Tensor& x, at::Tensor y) const {
    TORCH_CHECK(x.size(0) == batch_rows_, "MultiLoraHook: built for ", batch_rows_, " rows, called with ", x.size(0));
    const bool small = x.numel() / x.size(-1) <= kSmallCallPositions;
    if (cpu_loop_ && add_positions_cpu(site, x, y, small)) return;
    if (small && stack_) {
        add_stacked(site, x, y);
        return;
    }
    add_grouped(site, x, y);
}

// Every call on the CPU in float32, decoding steps and prefill alike: each adapter's factors are
// applied to its positions by lora_positions (whose result for a position does not depend on what
// else is in the batch), in one parallel loop.
// - Decoding steps: per-adapter ATen products cost a gather, two BLAS calls and a scatter each
//   (hundreds of fixed costs per step); the stacked path multiplies every position by every
//   adapter (8x the arithmetic with W4's eight adapters).
// - Prefill: ATen's products of these narrow shapes were slow and erratic here. [M, 8] x [8, 512]
//   took 23 us at M = 320 and 195 us at M = 272 with two threads (LibTorch 1.13 over OpenBLAS
//   0.3.21; one thread: 25 us), and one adapter after the other left a core idle.
bool MultiLoraHook::add_positions_cpu(const models::LinearSite& site, const at::Tensor& x, at::Tensor& y,
                                      bool small) const {
    if (!x.device().is_cpu() || x.scalar_type() != at::kFloat || y.scalar_type() != at::kFloat || x.dim() != 3 ||
        y.dim() != 3 || x.stride(2) != 1 || y.stride(2) != 1)
        return false;
    std::vector<const SiteDelta*> deltas;
    bool any = false;
    for (const auto& g : groups_) {
        const SiteDelta* d = g.weights->at_site(site.id);
        if (d && (d->a.scalar_type() != at::kFloat || !d->a.is_contiguous() || !d->bt.is_contiguous())) return false;
        deltas.push_back(d);
        any = any || d;
    }
    if (!any) return true;  // no adapter of the batch targets this site (W4: 13 of a step's 49 calls)
    const int64_t T = x.size(1), in = x.size(2), out = y.size(2);
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    // Work items of at most kChunk positions of one adapter, so that a batch of few adapters still
    // spreads over every thread: few positions stream the factors once per item; prefill's items
    // reuse them from cache, 64 positions at a time. Items are ranges of two flat pointer arrays.
    const int64_t kChunk = small ? kLoraStreamingPositions : 64;
    struct Item {
        const SiteDelta* delta;
        size_t first;
        int64_t n;
    };
    std::vector<Item> items;
    std::vector<const float*> xs;
    std::vector<float*> ys;
    xs.reserve(static_cast<size_t>(batch_rows_ * T));
    ys.reserve(static_cast<size_t>(batch_rows_ * T));
    int64_t max_h = 0;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        if (!deltas[gi]) continue;
        for (int64_t b : groups_[gi].row_list)
            for (int64_t t = 0; t < T; ++t) {
                if (items.empty() || items.back().delta != deltas[gi] || items.back().n == kChunk)
                    items.push_back({deltas[gi], xs.size(), 0});
                xs.push_back(xp + b * x.stride(0) + t * x.stride(1));
                ys.push_back(yp + b * y.stride(0) + t * y.stride(1));
                ++items.back().n;
            }
    }
    // Cost: the factors read (r) and the arithmetic (positions x r).
    std::vector<int64_t> costs;
    for (const Item& item : items) {
        costs.push_back(item.delta->rank * (item.n + 4));
        max_h = std::max(max_h, item.delta->rank * item.n);
    }
    const auto bins = balance(costs, ops::pool_threads());
    ops::parallel_for(0, static_cast<int64_t>(bins.size()), 1, [&](int64_t begin, int64_t end) {
        std::vector<float> h(static_cast<size_t>(max_h));
        for (int64_t t = begin; t < end; ++t)
            for (size_t i : bins[static_cast<size_t>(t)]) {
                const Item& item = items[i];
                lora_positions(item.delta->a.data_ptr<float>(), item.delta->bt.data_ptr<float>(), item.delta->rank, in,
                               out, xs.data() + item.first, ys.data() + item.first, item.n, h.data());
            }
    });
    ++cpu_position_calls_;
    return true;
}

// Per adapter through ATen's matmul, off the CPU's float32 path: at prefill sizes its BLAS call is
// as fast as oneDNN's, and a request's logits then do not depend on how many rows shared its
// adapter (oneDNN's sgemm rounds differently for one row than for several: 2e-4 apart on the LoRA
// parity fixture).
void MultiLoraHook::add_grouped(const models::LinearSite& site, const at::Tensor& x, at::Tensor& y) const {
    for (const auto& g : groups_) {
        const SiteDelta* d = g.weights->at_site(site.id);
        if (!d) continue;
        if (g.contiguous) {
            at::Tensor xs = g.count == batch_rows_ ? x : x.narrow(0, g.start, g.count);
            at::Tensor ys = g.count == batch_rows_ ? y : y.narrow(0, g.start, g.count);
            ys.add_(at::matmul(at::matmul(xs, d->a.t()), d->bt));
        } else {
            if (!g.rows.defined()) g.rows = at::tensor(g.row_list, at::TensorOptions().dtype(at::kLong)).to(x.device());
            at::Tensor delta = at::matmul(at::matmul(x.index_select(0, g.rows), d->a.t()), d->bt);
            y.index_add_(0, g.rows, delta);
        }
    }
}

// Every position is multiplied by every adapter's A (x A_stack^T), the columns of other adapters
// are zeroed, and one product by B_stack gives each row its own adapter's delta: the zeroed
// columns add exact zeros. At decoding sizes the extra arithmetic is far cheaper than the fixed
// cost of per-adapter products.
void MultiLoraHook::add_stacked(const models::LinearSite& site, const at::Tensor& x, at::Tensor& y) const {
    const LoraStack::Site* s = stack_->site(site.id);
    if (!s) return;  // no adapter of the batch targets this site
    const int64_t B = x.size(0), in = x.size(-1), positions = x.numel() / in, per_row = positions / B;
    const int64_t width = s->a.size(0);
    at::Tensor mask = at::zeros({positions, width}, at::TensorOptions().dtype(at::kFloat));
    float* m = mask.data_ptr<float>();
    for (const auto& g : groups_) {
        const int64_t offset = s->offset[g.stack_index], rank = s->rank[g.stack_index];
        for (int64_t b : g.row_list)
            for (int64_t t = 0; t < per_row; ++t) std::fill_n(m + (b * per_row + t) * width + offset, rank, 1.0f);
    }
    at::Tensor h = models::affine(x.reshape({positions, in}), s->a);  // [positions, sum r]
    h.mul_(mask.to(h.options()));
    y.add_(at::matmul(h, s->bt).view(y.sizes()));
}

}  // namespace lorascope::adapters
