// A RequestSink for the remote-backend tests: collects one request's events and waits for its
// first token or its finish.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::test {

class WaitSink : public RequestSink {
public:
    void on_token(const TokenEvent& e) override {
        std::lock_guard<std::mutex> l(m_);
        tokens.push_back(e);
        cv_.notify_all();
    }
    void on_finish(const FinishEvent& e) override {
        std::lock_guard<std::mutex> l(m_);
        finish = e;
        done = true;
        cv_.notify_all();
    }
    bool wait(int ms) {
        std::unique_lock<std::mutex> l(m_);
        return cv_.wait_for(l, std::chrono::milliseconds(ms), [&] { return done; });
    }
    bool wait_first_token(int ms) {
        std::unique_lock<std::mutex> l(m_);
        return cv_.wait_for(l, std::chrono::milliseconds(ms), [&] { return !tokens.empty() || done; });
    }
    // The tokens' text deltas joined: what the stream showed.
    std::string streamed() {
        std::lock_guard<std::mutex> l(m_);
        std::string s;
        for (const auto& t : tokens) s += t.text_delta;
        return s;
    }
    std::vector<TokenEvent> tokens;
    FinishEvent finish;
    bool done = false;

private:
    std::mutex m_;
    std::condition_variable cv_;
};

}  // namespace lorascope::test
