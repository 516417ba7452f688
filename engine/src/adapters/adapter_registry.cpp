#include "adapters/adapter_registry.h"

#include <algorithm>

#include "adapters/adapter_merge.h"
#include "lorascope/error.h"

namespace lorascope::adapters {

struct AdapterEntry {
    std::string name;
    std::string dir;
    std::shared_ptr<const AdapterMerge> merge;     // a merge of other entries (no directory of its own)
    AdapterInfo info;                              // `loaded` is derived from `weights`
    std::shared_ptr<const LoraWeights> weights;    // null while evicted
    int64_t pins = 0;
    uint64_t last_used = 0;
    bool leaving = false;
};

AdapterLease::AdapterLease(AdapterLease&& other) noexcept
    : registry_(other.registry_), entry_(std::move(other.entry_)), weights_(std::move(other.weights_)) {
    other.registry_ = nullptr;
}

AdapterLease& AdapterLease::operator=(AdapterLease&& other) noexcept {
    if (this != &other) {
        release();
        registry_ = other.registry_;
        entry_ = std::move(other.entry_);
        weights_ = std::move(other.weights_);
        other.registry_ = nullptr;
    }
    return *this;
}

AdapterLease::~AdapterLease() { release(); }

const std::string& AdapterLease::name() const {
    static const std::string none;
    return entry_ ? entry_->name : none;
}

void AdapterLease::release() {
    if (registry_ && entry_) registry_->release(*entry_);
    registry_ = nullptr;
    entry_.reset();
    weights_.reset();
}

AdapterRegistry::AdapterRegistry(const models::Model& model, int64_t memory_budget_bytes)
    : model_(model), budget_(std::max<int64_t>(0, memory_budget_bytes)) {}

AdapterRegistry::~AdapterRegistry() = default;

at::Tensor AdapterRegistry::base_weight(const std::string& module) const {
    std::lock_guard<std::mutex> lock(base_mutex_);
    if (!base_store_) {
        weights::WeightLoadOptions options;  // float32 on the CPU: only compared, never computed with
        base_store_ = weights::WeightStore::open(model_.directory(), model_.config(), options);
    }
    return base_store_->get(module + ".weight");
}

AdapterRegistry::Built AdapterRegistry::build(const std::string& name, const std::string& dir) const {
    auto peft = io::PeftAdapter::open(dir);
    const AdapterValidation v = validate_adapter(*peft, model_.linear_sites(), model_.config(), model_.directory());
    Built built;
    built.weights = LoraWeights::materialise(*peft, v, model_.linear_sites().size(), model_.options(),
                                             [this](const std::string& module) { return base_weight(module); });
    AdapterInfo& info = built.info;
    info.name = name;
    info.path = dir;
    info.rank = v.rank;
    info.alpha = v.alpha;
    info.targets = v.targets;
    info.parameters = v.parameters;
    info.bytes = built.weights->bytes();
    info.loaded = true;
    info.warnings = v.warnings;
    return built;
}

AdapterRegistry::Built AdapterRegistry::build_merge(const std::string& name, const AdapterMerge& merge) const {
    std::vector<MergeConstituent> constituents;
    for (const std::string& id : merge.ids) {
        std::string dir;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = entries_.find(id);
            if (it == entries_.end() || it->second->leaving || it->second->merge)
                throw Error(ErrorKind::NotFound, name, unknown_message(id));
            dir = it->second->dir;
        }
        MergeConstituent c;
        c.name = id;
        c.peft = io::PeftAdapter::open(dir);
        c.validation = validate_adapter(*c.peft, model_.linear_sites(), model_.config(), model_.directory());
        constituents.push_back(std::move(c));
    }
    MergedAdapter merged = merge_adapters(merge, constituents, model_);
    Built built;
    built.info = std::move(merged.info);
    built.info.name = name;
    built.weights = std::move(merged.weights);
    std::lock_guard<std::mutex> lock(mutex_);
    ++merges_built_;
    return built;
}

AdapterRegistry::Built AdapterRegistry::build_entry(const AdapterEntry& entry) const {
    return entry.merge ? build_merge(entry.name, *entry.merge) : build(entry.name, entry.dir);
}

int64_t AdapterRegistry::merges_built() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return merges_built_;
}

std::string AdapterRegistry::declare_merge(const AdapterMerge& merge) {
    check_adapter_merge(merge);
    const std::string name = merge_name(merge);
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::string, int64_t> ranks;
    for (const std::string& id : merge.ids) {
        auto it = entries_.find(id);
        if (it == entries_.end() || it->second->leaving) throw Error(ErrorKind::NotFound, name, unknown_message(id));
        if (it->second->merge) throw Error(ErrorKind::InvalidArgument, name, "a merge cannot merge another merge");
        ranks[id] = it->second->info.rank;
    }
    // Refused here, at submit, rather than when admission builds the merge (merge_adapters checks
    // the same and the factors' shapes too).
    check_merge_ranks(merge, ranks, name);
    auto it = entries_.find(name);
    if (it != entries_.end() && !it->second->leaving) {
        it->second->last_used = ++clock_;
        return name;
    }
    if (it != entries_.end()) throw Error(ErrorKind::NotFound, name, "this merge is being removed");
    drop_idle_merges_locked(kMaxMerges - 1);
    auto entry = std::make_shared<AdapterEntry>();
    entry->name = name;
    entry->merge = std::make_shared<const AdapterMerge>(merge);
    entry->info.name = name;
    entry->last_used = ++clock_;
    entries_.emplace(name, std::move(entry));
    return name;
}

// Merges keep no pins on their adapters (their factors are their own): unloading an adapter only
// forgets the merges of it, and requests already holding one keep it until they finish.
void AdapterRegistry::forget_merges_locked(const std::string& adapter) {
    for (auto it = entries_.begin(); it != entries_.end();) {
        const auto& m = it->second->merge;
        if (m && std::find(m->ids.begin(), m->ids.end(), adapter) != m->ids.end()) it = entries_.erase(it);
        else ++it;
    }
}

void AdapterRegistry::drop_idle_merges_locked(size_t keep) {
    while (true) {
        size_t count = 0;
        std::map<std::string, std::shared_ptr<AdapterEntry>>::iterator oldest = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            if (!it->second->merge) continue;
            ++count;
            if (it->second->pins == 0 && (oldest == entries_.end() || it->second->last_used < oldest->second->last_used))
                oldest = it;
        }
        if (count <= keep || oldest == entries_.end()) return;
        entries_.erase(oldest);
    }
}

AdapterInfo AdapterRegistry::load(const std::string& name, const std::string& dir) {
    if (name.empty()) throw Error(ErrorKind::InvalidArgument, dir, "an adapter needs a non-empty name");
    if (name.rfind("merge:", 0) == 0)
        throw Error(ErrorKind::InvalidArgument, dir, "adapter names beginning with 'merge:' are reserved for merges");
    auto already = [&](const AdapterEntry& e) {
        return Error(ErrorKind::InvalidArgument, dir,
                     "an adapter named '" + name + "' is already loaded (from " + e.dir + "); unload it first");
    };
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(name);
        if (it != entries_.end()) throw already(*it->second);
    }
    Built built;
    try {
        built = build(name, dir);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        failures_[name] = e.what();
        throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) throw already(*it->second);
    auto entry = std::make_shared<AdapterEntry>();
    entry->name = name;
    entry->dir = dir;
    entry->info = built.info;
    entry->last_used = ++clock_;
    make_room_locked(built.weights->bytes(), nullptr);
    entry->weights = std::move(built.weights);
    entries_.emplace(name, entry);
    failures_.erase(name);
    return entry->info;
}

void AdapterRegistry::unload(const std::string& name) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end() || it->second->leaving)
        throw Error(ErrorKind::NotFound, "no adapter named '" + name + "' is loaded");
    std::shared_ptr<AdapterEntry> entry = it->second;
    entry->leaving = true;
    unpinned_.wait(lock, [&] { return entry->pins == 0 || shutting_down_; });
    if (entry->pins > 0)
        throw Error(ErrorKind::Cancelled, "adapter '" + name + "' was not unloaded: the engine is shutting down");
    entries_.erase(name);
    forget_merges_locked(name);
}

void AdapterRegistry::shutdown() {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    unpinned_.notify_all();
}

bool AdapterRegistry::resident(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    return it != entries_.end() && !it->second->leaving && it->second->weights != nullptr;
}

std::vector<AdapterInfo> AdapterRegistry::list() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<AdapterInfo> out;
    for (const auto& [name, e] : entries_) {
        if (e->leaving || e->merge) continue;   // merges are the engine's cache, not loaded adapters
        AdapterInfo info = e->info;
        info.loaded = e->weights != nullptr;
        out.push_back(std::move(info));
    }
    return out;
}

bool AdapterRegistry::has(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    return it != entries_.end() && !it->second->leaving;
}

std::string AdapterRegistry::unavailable_reason(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return unknown_message(name);
    if (it->second->leaving) return "adapter '" + name + "' is being unloaded";
    return {};
}

std::string AdapterRegistry::unknown_message(const std::string& name) const {
    auto f = failures_.find(name);
    if (f != failures_.end()) return "adapter '" + name + "' failed to load: " + f->second;
    if (name.rfind("merge:", 0) == 0) return "the merge " + name + " is gone: one of its adapters was unloaded";
    return "no adapter named '" + name + "' is loaded";
}

AdapterLease AdapterRegistry::acquire(const std::string& name) {
    std::shared_ptr<AdapterEntry> entry;
    bool reload = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(name);
        if (it == entries_.end()) throw Error(ErrorKind::NotFound, unknown_message(name));
        entry = it->second;
        if (entry->leaving) throw Error(ErrorKind::NotFound, "adapter '" + name + "' is being unloaded");
        ++entry->pins;
        entry->last_used = ++clock_;
        reload = entry->weights == nullptr;
    }
    AdapterLease lease;
    lease.registry_ = this;
    lease.entry_ = entry;  // from here on the lease's destructor undoes the pin
    if (reload) {
        Built built;
        try {
            built = build_entry(*entry);
        } catch (const std::exception& e) {
            if (entry->merge) throw Error(ErrorKind::InvalidArgument, std::string("merging failed: ") + e.what());
            throw Error(ErrorKind::Format, "adapter '" + name + "' was evicted and could not be reloaded: " + e.what());
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (!entry->weights) {
            make_room_locked(built.weights->bytes(), entry.get());
            entry->weights = std::move(built.weights);
        }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    lease.weights_ = entry->weights;
    return lease;
}

void AdapterRegistry::release(AdapterEntry& entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    --entry.pins;
    entry.last_used = ++clock_;
    if (entry.pins == 0) unpinned_.notify_all();
}

int64_t AdapterRegistry::resident_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const auto& [name, e] : entries_)
        if (e->weights) total += e->weights->bytes();
    return total;
}

// The budget is a target, not a hard cap: only idle adapters are evicted, so pinned ones (and the
// one being made resident) may take the total over it while their requests run.
void AdapterRegistry::make_room_locked(int64_t needed, const AdapterEntry* keep) {
    if (budget_ <= 0) return;
    int64_t total = needed;
    for (const auto& [name, e] : entries_)
        if (e->weights) total += e->weights->bytes();
    while (total > budget_) {
        AdapterEntry* victim = nullptr;
        for (const auto& [name, e] : entries_)
            if (e->weights && e->pins == 0 && e.get() != keep && (!victim || e->last_used < victim->last_used))
                victim = e.get();
        if (!victim) break;
        total -= victim->weights->bytes();
        victim->weights.reset();
    }
}

}  // namespace lorascope::adapters
