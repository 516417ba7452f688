// The engine's waiting queue and admission: which requests join at a step boundary under the row
// limit, the token budget and the KV cache (each admitted request's blocks are reserved), with
// evicted adapters reloaded off the engine thread (their requests wait; the others decode).
#pragma once

#include <climits>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/adapter_registry.h"
#include "engine/adapter_loader.h"
#include "engine/live_request.h"
#include "lorascope/engine.h"
#include "models/kv_pool.h"
#include "batching/admission.h"

namespace lorascope::engine_detail {

class RequestScheduler {
public:
    RequestScheduler(const models::Model& model, adapters::AdapterRegistry& registry, models::KvPool& pool,
                     const EngineOptions& options);

    // Queues a request of the current intake: the requests that arrive between two step boundaries
    // (the engine calls end_intake() at each); between them, their arrival order is chance.
    void enqueue(std::unique_ptr<LiveRequest> request);
    void end_intake() { ++intake_; }
    bool empty() const { return waiting_.empty(); }
    int64_t depth() const { return static_cast<int64_t>(waiting_.size()); }

    // Finishes the waiting requests `wanted` picks as cancelled.
    void cancel(const std::function<bool(RequestId)>& wanted);

    // The requests that join now, in queue order: adapter pinned, KV blocks reserved. `row_limit`:
    // the rows the batch may hold at this boundary (a latency target); soft, see batching::Limits.
    std::vector<std::unique_ptr<LiveRequest>> admit(const batching::BatchShape& running, int64_t row_limit = INT64_MAX);
    // Under QueueOrder::Pack, puts the waiting requests in the order they should join
    // (batching::packed_order over max_batch_size rows; under a latency target the end joins
    // shortest first too; `prompt_weight`: what a prompt token weighs against a token to decode,
    // BatchRunner::prompt_weight); under Arrival it does nothing. Before front_prompt_tokens() and
    // admit() at a step boundary.
    void order(double prompt_weight = 0);
    // The prompt length of the first waiting request (0: none waits).
    int64_t front_prompt_tokens() const;

private:
    void start_reloads();
    bool ready(const LiveRequest& r) const;
    // Pins r's adapter; false (and r finished with the error) when it cannot be served.
    bool pin_adapter(LiveRequest& r);
    std::string rejection(const LiveRequest& r) const;

    const models::Model& model_;
    adapters::AdapterRegistry& registry_;
    models::KvPool& pool_;
    batching::Limits limits_;
    QueueOrder queue_order_ = QueueOrder::Arrival;
    bool under_target_ = false;   // EngineOptions::tpot_target_ms > 0
    int64_t intake_ = 0;
    std::deque<std::unique_ptr<LiveRequest>> waiting_;
    AdapterLoader loader_;   // evicted adapters' reloads, off the engine thread
};

}  // namespace lorascope::engine_detail
