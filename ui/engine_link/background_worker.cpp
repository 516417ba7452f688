#include "engine_link/background_worker.h"

namespace lorascope::ui {

BackgroundWorker::BackgroundWorker() : thread_([this] { run(); }) {}

BackgroundWorker::~BackgroundWorker() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void BackgroundWorker::post(std::function<void()> job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) return;
        jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
}

void BackgroundWorker::drain_and_stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        run_queued_on_stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void BackgroundWorker::run() {
    for (;;) {
        std::function<void()> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty() || (stopping_ && !run_queued_on_stop_)) {
                // Dropped jobs may own resources (an engine to release): destroy them here,
                // on this thread, rather than on whoever destroys the worker.
                std::deque<std::function<void()>> dropped;
                dropped.swap(jobs_);
                lock.unlock();
                dropped.clear();
                return;
            }
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        job();
    }
}

}  // namespace lorascope::ui
