// One std::thread that runs blocking engine calls (model load, adapter load/unload, engine
// teardown) in order, so the GUI thread never waits on disk or on running requests.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace lorascope::ui {

class BackgroundWorker {
public:
    BackgroundWorker();
    ~BackgroundWorker();   // finishes the running job, drops queued ones, joins
    BackgroundWorker(const BackgroundWorker&) = delete;
    BackgroundWorker& operator=(const BackgroundWorker&) = delete;

    void post(std::function<void()> job);
    // Runs the queued jobs too before returning (tests, orderly shutdown).
    void drain_and_stop();

private:
    void run();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    bool run_queued_on_stop_ = false;
    std::thread thread_;
};

}  // namespace lorascope::ui
