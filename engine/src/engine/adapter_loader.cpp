#include "engine/adapter_loader.h"

namespace lorascope::engine_detail {

AdapterLoader::~AdapterLoader() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void AdapterLoader::start(std::shared_ptr<AdapterLoad> load, std::string name) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.emplace_back(std::move(load), std::move(name));
        if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    wake_.notify_one();
}

void AdapterLoader::run() {
    for (;;) {
        std::pair<std::shared_ptr<AdapterLoad>, std::string> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_) return;
            job = std::move(queue_.front());
            queue_.pop_front();
        }
        adapters::AdapterLease lease;
        std::string error;
        try {
            lease = registry_.acquire(job.second);
        } catch (const std::exception& e) {
            error = e.what();
        }
        std::lock_guard<std::mutex> lock(job.first->mutex);
        job.first->lease = std::move(lease);
        job.first->error = std::move(error);
        job.first->done = true;
    }
}

}  // namespace lorascope::engine_detail
