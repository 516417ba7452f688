// A RequestSink that records every event, thread-safely, for tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::test {

class CollectingSink : public RequestSink {
public:
    using Clock = std::chrono::steady_clock;
    struct Record {
        std::vector<TokenEvent> tokens;
        std::vector<Clock::time_point> token_times;   // when each token event arrived
        std::vector<FinishEvent> finishes;
        Clock::time_point finish_time;
        std::string streamed;
        bool token_after_finish = false;
    };

    void on_token(const TokenEvent& e) override {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& r = records_[e.id];
        if (!r.finishes.empty()) r.token_after_finish = true;
        r.tokens.push_back(e);
        r.token_times.push_back(Clock::now());
        r.streamed += e.text_delta;
    }
    void on_finish(const FinishEvent& e) override {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& r = records_[e.id];
        r.finishes.push_back(e);
        r.finish_time = Clock::now();
        ++finished_;
        changed_.notify_all();
    }
    // Waits until `count` finish events arrived in total; false on timeout.
    bool wait_finished(size_t count, std::chrono::seconds timeout = std::chrono::seconds(300)) {
        std::unique_lock<std::mutex> lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return finished_ >= count; });
    }
    // Waits until request `id` has finished.
    bool wait_until(RequestId id, std::chrono::seconds timeout = std::chrono::seconds(300)) {
        std::unique_lock<std::mutex> lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return !records_[id].finishes.empty(); });
    }
    Record get(RequestId id) {
        std::lock_guard<std::mutex> lock(mutex_);
        return records_[id];
    }
    size_t finished() {
        std::lock_guard<std::mutex> lock(mutex_);
        return finished_;
    }

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<RequestId, Record> records_;
    size_t finished_ = 0;
};

}  // namespace lorascope::test
