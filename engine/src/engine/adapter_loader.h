// Reloads of evicted adapters off the engine thread: one loader thread, started at the first
// reload and kept for the scheduler's life, taking reloads one after another. A thread per reload,
// joined only when the engine went away, grew VmSize from 1.65 to 4.16 GB and the process's
// mappings by 430 over 200 requests alternating two adapters under a budget smaller than one
// (issue 26); one thread keeps both flat whatever the eviction rate.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "adapters/adapter_registry.h"

namespace lorascope::engine_detail {

// One reload: its result, read by the engine thread once `done`.
struct AdapterLoad {
    std::mutex mutex;
    bool done = false;
    adapters::AdapterLease lease;
    std::string error;
};

class AdapterLoader {
public:
    explicit AdapterLoader(adapters::AdapterRegistry& registry) : registry_(registry) {}
    ~AdapterLoader();   // finishes the reload in progress (it uses the registry), drops the rest
    AdapterLoader(const AdapterLoader&) = delete;
    AdapterLoader& operator=(const AdapterLoader&) = delete;

    // Queues a reload of `name`; `load` is done (with a lease or an error) when it ran.
    void start(std::shared_ptr<AdapterLoad> load, std::string name);

private:
    void run();

    adapters::AdapterRegistry& registry_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::pair<std::shared_ptr<AdapterLoad>, std::string>> queue_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace lorascope::engine_detail
