#include "engine/request_scheduler.h"

#include <algorithm>
#include <set>

#include "engine/fault_injection.h"
#include "lorascope/error.h"

namespace lorascope::engine_detail {

RequestScheduler::RequestScheduler(const models::Model& model, adapters::AdapterRegistry& registry,
                                   models::KvPool& pool, const EngineOptions& options)
    : model_(model), registry_(registry), pool_(pool), loader_(registry) {
    limits_.max_batch_size = options.max_batch_size;
    limits_.max_batch_tokens = options.max_batch_tokens;
    queue_order_ = options.queue_order;
    under_target_ = options.tpot_target_ms > 0;
}

void RequestScheduler::enqueue(std::unique_ptr<LiveRequest> request) {
    request->intake = intake_;
    waiting_.push_back(std::move(request));
}

void RequestScheduler::order(double prompt_weight) {
    if (queue_order_ != QueueOrder::Pack || waiting_.size() < 2) return;
    std::vector<batching::Demand> demands;
    demands.reserve(waiting_.size());
    for (const auto& w : waiting_) demands.push_back(w->demand());
    const auto order = batching::packed_order(demands, limits_.max_batch_size, /*end_longest_first=*/!under_target_,
                                              prompt_weight);
    std::deque<std::unique_ptr<LiveRequest>> ordered;
    for (size_t i : order) ordered.push_back(std::move(waiting_[i]));
    waiting_.swap(ordered);
}

void RequestScheduler::cancel(const std::function<bool(RequestId)>& wanted) {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (wanted((*it)->id)) {
            (*it)->finish(FinishReason::Cancelled);
            it = waiting_.erase(it);
        } else {
            ++it;
        }
    }
}

bool RequestScheduler::ready(const LiveRequest& r) const {
    if (r.adapter_name.empty()) return true;
    if (r.adapter_load) {
        std::lock_guard<std::mutex> lock(r.adapter_load->mutex);
        return r.adapter_load->done;
    }
    return registry_.resident(r.adapter_name) || !registry_.has(r.adapter_name);  // gone: fails at pin
}

// One reload per adapter at a time, for the first waiting request that needs it; the requests
// behind it pin the adapter once it is resident again.
void RequestScheduler::start_reloads() {
    std::set<std::string> loading;
    for (const auto& r : waiting_)
        if (r->adapter_load) loading.insert(r->adapter_name);
    for (auto& r : waiting_) {
        if (r->adapter_name.empty() || r->adapter_load || loading.count(r->adapter_name)) continue;
        if (!registry_.has(r->adapter_name) || registry_.resident(r->adapter_name)) continue;
        loading.insert(r->adapter_name);
        auto load = std::make_shared<AdapterLoad>();
        r->adapter_load = load;
        loader_.start(std::move(load), r->adapter_name);
    }
}

bool RequestScheduler::pin_adapter(LiveRequest& r) {
    if (r.adapter_name.empty()) return true;
    try {
        fault_point(FaultPoint::AdapterAcquire, r.ids());
        if (r.adapter_load) {
            std::lock_guard<std::mutex> lock(r.adapter_load->mutex);
            if (!r.adapter_load->error.empty()) throw lorascope::Error(ErrorKind::Format, r.adapter_load->error);
            r.adapter = std::move(r.adapter_load->lease);
        } else {
            r.adapter = registry_.acquire(r.adapter_name);
        }
        r.adapter_load.reset();
        return true;
    } catch (const std::exception& e) {
        r.adapter_load.reset();
        r.finish(FinishReason::Error, e.what());
        return false;
    }
}

std::string RequestScheduler::rejection(const LiveRequest& r) const {
    auto d = r.demand();
    d.kv_blocks = r.kv_blocks_needed(model_.is_encoder_decoder());
    if (batching::malformed(d)) return "internal: a malformed admission demand (negative size)";
    if (d.rows > limits_.max_batch_size)
        return "request needs " + std::to_string(d.rows) +
               " batch rows (num_beams, or num_return_sequences when sampling), more than the engine's max_batch_size (" +
               std::to_string(limits_.max_batch_size) + ")";
    if (d.kv_blocks > limits_.kv_blocks_capacity) {
        const double mib = static_cast<double>(d.kv_blocks * pool_.bytes_per_block()) / (1 << 20);
        const double cap = static_cast<double>(pool_.capacity() * pool_.bytes_per_block()) / (1 << 20);
        return "request needs " + std::to_string(static_cast<int64_t>(mib + 0.5)) + " MiB of KV cache, more than the whole cache (" +
               std::to_string(static_cast<int64_t>(cap + 0.5)) + " MiB; raise kv_cache_mb / --kv-cache-mb)";
    }
    return "request needs " + std::to_string(d.prompt_tokens + d.max_new_tokens) +
           " positions, more than the engine's max_batch_tokens (" + std::to_string(limits_.max_batch_tokens) + ") allows";
}

int64_t RequestScheduler::front_prompt_tokens() const {
    return waiting_.empty() ? 0 : static_cast<int64_t>(waiting_.front()->prompt_ids.size());
}

std::vector<std::unique_ptr<LiveRequest>> RequestScheduler::admit(const batching::BatchShape& running, int64_t row_limit) {
    std::vector<std::unique_ptr<LiveRequest>> admitted;
    if (waiting_.empty()) return admitted;
    start_reloads();
    batching::Limits limits = limits_;
    limits.rows_now = row_limit;
    limits.kv_blocks_capacity = pool_.capacity();
    limits.kv_blocks_free = pool_.capacity() - pool_.reserved();
    limits_.kv_blocks_capacity = limits.kv_blocks_capacity;

    std::deque<batching::Demand> demands;
    for (auto& w : waiting_) {
        if (!ready(*w)) continue;  // its adapter is being reloaded: the others go ahead
        auto d = w->demand();
        d.kv_blocks = w->kv_blocks_needed(model_.is_encoder_decoder());
        demands.push_back(d);
    }
    const auto decision = batching::admit(demands, running, limits);
    for (const auto& d : demands)  // admit() counts how often a request was passed over
        for (auto& w : waiting_)
            if (w->id == d.id) w->skipped = d.skipped;

    const std::set<uint64_t> take(decision.admitted.begin(), decision.admitted.end());
    const std::set<uint64_t> refuse(decision.rejected.begin(), decision.rejected.end());
    const auto now = Clock::now();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        LiveRequest& r = **it;
        if (refuse.count(r.id)) {
            r.finish(FinishReason::Error, rejection(r));
            it = waiting_.erase(it);
            continue;
        }
        if (!take.count(r.id)) {
            ++it;
            continue;
        }
        std::unique_ptr<LiveRequest> live = std::move(*it);
        it = waiting_.erase(it);
        if (!pin_adapter(*live)) continue;
        const int64_t blocks = live->kv_blocks_needed(model_.is_encoder_decoder());
        bool reserved = false;
        try {
            reserved = pool_.try_reserve(blocks);
        } catch (const std::exception& e) {   // malformed: refused in release builds (kv_pool.h)
            live->finish(FinishReason::Error, std::string("internal: ") + e.what());
            continue;
        }
        if (!reserved) {  // admit() counted the same blocks: cannot happen
            live->finish(FinishReason::Error, "internal: the KV cache could not reserve what admission granted");
            continue;
        }
        live->kv_blocks = blocks;
        live->admitted = now;
        admitted.push_back(std::move(live));
    }
    return admitted;
}

}  // namespace lorascope::engine_detail
