// The adapters an engine serves: loaded and validated against its model at runtime, pinned by the
// requests that use them, accounted in bytes, evicted least-recently-used when idle and over an
// optional memory budget, and reloaded from their directory when a request needs them again.
//
// Thread safety: load, unload, list and has may be called from any thread; acquire is called by
// the engine thread. Loading does its file and tensor work outside the registry lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/lora_weights.h"
#include "weights/weight_store.h"
#include "lorascope/engine.h"
#include "models/model.h"

namespace lorascope::adapters {

struct AdapterEntry;
class AdapterRegistry;

// A request's pin on an adapter: while a lease lives, its adapter is neither evicted nor removed.
class AdapterLease {
public:
    AdapterLease() = default;
    AdapterLease(AdapterLease&& other) noexcept;
    AdapterLease& operator=(AdapterLease&& other) noexcept;
    AdapterLease(const AdapterLease&) = delete;
    AdapterLease& operator=(const AdapterLease&) = delete;
    ~AdapterLease();

    explicit operator bool() const { return entry_ != nullptr; }
    const std::shared_ptr<const LoraWeights>& weights() const { return weights_; }
    const std::string& name() const;

private:
    friend class AdapterRegistry;
    void release();
    AdapterRegistry* registry_ = nullptr;
    std::shared_ptr<AdapterEntry> entry_;
    std::shared_ptr<const LoraWeights> weights_;
};

class AdapterRegistry {
public:
    // memory_budget_bytes <= 0: unlimited. The model must outlive the registry.
    explicit AdapterRegistry(const models::Model& model, int64_t memory_budget_bytes = 0);
    ~AdapterRegistry();

    // Opens, validates and materialises the adapter in `dir` under `name`. Throws lorascope::Error
    // naming the file and problem; nothing is registered then, and the failure is remembered so that
    // requests naming the adapter get that reason.
    AdapterInfo load(const std::string& name, const std::string& dir);
    // Refuses new acquisitions at once, then blocks until every lease on the adapter is released
    // and removes it. Throws lorascope::Error (NotFound) for an unknown name, and (Cancelled) when
    // shutdown() is called meanwhile.
    void unload(const std::string& name);
    // Wakes every unload() still waiting for pins (the engine is going away and its paused or
    // running requests will release them only when it is destroyed).
    void shutdown();
    std::vector<AdapterInfo> list() const;
    bool has(const std::string& name) const;       // registered and not being unloaded
    bool resident(const std::string& name) const;  // registered and its weights in memory
    // Why a request naming `name` cannot be served (unknown, failed to load, being unloaded); empty when it can.
    std::string unavailable_reason(const std::string& name) const;

    // Pins the adapter for one request, reloading it from its directory when it was evicted (or
    // building a declared merge that is not resident). Throws lorascope::Error with a message for
    // the client: unknown, failed, unloading, reload failed.
    AdapterLease acquire(const std::string& name);

    // Registers a merge of registered adapters (adapters/adapter_merge.h) under its name
    // (merge_name) without building it, and returns the name: acquire builds it (on the engine's
    // loader thread, as it reloads evicted adapters), and it stays resident, shared by every
    // request naming the same merge, until the memory budget evicts it (it is rebuilt when needed
    // again). Merges are not listed; at most kMaxMerges are kept, the least recently used idle
    // ones forgotten first; unloading one of its adapters forgets a merge. Throws lorascope::Error
    // for an invalid merge or an adapter that is not registered.
    std::string declare_merge(const AdapterMerge& merge);
    static constexpr size_t kMaxMerges = 64;
    int64_t merges_built() const;   // merges computed so far (tests: a merge is reused, not rebuilt)

    int64_t resident_bytes() const;
    int64_t memory_budget() const { return budget_; }

private:
    friend class AdapterLease;
    struct Built {
        AdapterInfo info;
        std::shared_ptr<const LoraWeights> weights;
    };
    Built build(const std::string& name, const std::string& dir) const;
    Built build_merge(const std::string& name, const AdapterMerge& merge) const;
    Built build_entry(const AdapterEntry& entry) const;
    void forget_merges_locked(const std::string& adapter);
    void drop_idle_merges_locked(size_t keep);
    at::Tensor base_weight(const std::string& module) const;
    void make_room_locked(int64_t needed, const AdapterEntry* keep);
    void release(AdapterEntry& entry);
    std::string unknown_message(const std::string& name) const;

    const models::Model& model_;
    const int64_t budget_;

    mutable std::mutex mutex_;
    std::condition_variable unpinned_;
    std::map<std::string, std::shared_ptr<AdapterEntry>> entries_;
    std::map<std::string, std::string> failures_;   // name -> why its last load failed
    uint64_t clock_ = 0;
    bool shutting_down_ = false;
    mutable int64_t merges_built_ = 0;   // under mutex_

    mutable std::mutex base_mutex_;
    mutable std::shared_ptr<weights::WeightStore> base_store_;  // opened on first need (lm_head copies)
};

}  // namespace lorascope::adapters
