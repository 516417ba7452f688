// A stand-in for lorascope::Engine in UI tests: deterministic token streams, a real worker
// std::thread (so events cross threads as with the real engine), continuous batching in
// miniature (joins, leaves, a row cap), pause/step_once and StepStats after every step.
// It tests the UI's plumbing, not numerics.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "lorascope/engine.h"

namespace lorascope::test {

struct FakeEngineSettings {
    int step_delay_ms = 2;         // wall time per step
    int64_t default_new_tokens = 12;
    int64_t bart_positions = 0;    // > 0: a BART config with these learned positions (none: T5's relative ones)
    int64_t fail_after_tokens = 0; // > 0: every request fails after streaming this many tokens, its finish
                                   // carrying no text (as an engine error does)
    bool causal = false;           // a decoder-only (BLOOM) config instead of T5's
};

class FakeEngine : public Engine {
public:
    explicit FakeEngine(const EngineOptions& options, FakeEngineSettings settings = {});
    ~FakeEngine() override;

    // Throws lorascope::Error like the real factory when model_dir lacks config.json.
    static std::unique_ptr<Engine> create(const EngineOptions& options, FakeEngineSettings settings = {});

    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override;
    void cancel(RequestId id) override;
    void cancel_all() override;
    AdapterInfo load_adapter(const std::string& name, const std::string& dir) override;
    void unload_adapter(const std::string& name) override;
    std::vector<AdapterInfo> adapters() const override;
    void set_stats_listener(std::function<void(const StepStats&)> listener) override;
    void set_paused(bool paused) override;
    void step_once() override;
    void wait_idle() override;
    const ModelConfig& model_config() const override { return model_config_; }
    const GenerationConfig& generation_config() const override { return generation_config_; }

    int64_t steps_run() const { return steps_run_.load(); }
    std::vector<Request> submitted() const;   // every request taken, in order

    // params.top_alternatives: k alternatives, the chosen token first (it is the most likely),
    // then neighbours in the vocabulary, less likely each.
    static std::vector<TokenAlternative> alternatives_of(int64_t id, float logprob, bool leading_space, int64_t k);
    // params.prompt_logprobs: a word per prompt token (decoder-only: the prompt, its first token
    // without a logprob; encoder-decoder: Request::target), each scored by its word and adapter.
    static std::vector<PromptTokenLogprob> prompt_logprobs_of(const Request& request, bool causal);

    // What the fake generates for a prompt and adapter: tokens shared by every adapter, with
    // every third one depending on the adapter, so comparison columns differ in places.
    struct Token { int64_t id; std::string text; float logprob; };
    static std::vector<Token> script(const std::string& prompt, const std::string& adapter, int64_t n);
    static std::string expected_text(const std::string& prompt, const std::string& adapter, int64_t n);

private:
    struct Row {
        RequestId id;
        Request request;
        std::shared_ptr<RequestSink> sink;
        std::vector<Token> tokens;
        size_t produced = 0;
        std::chrono::steady_clock::time_point submitted, first_token;
    };
    void run();
    void finish(Row& row, FinishReason reason, const std::string& error = {});

    EngineOptions options_;
    FakeEngineSettings settings_;
    ModelConfig model_config_;
    GenerationConfig generation_config_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<Row> queued_;
    std::vector<Row> running_;
    std::map<std::string, AdapterInfo> adapters_;
    std::vector<RequestId> cancel_requests_;
    std::vector<Request> submitted_;
    std::function<void(const StepStats&)> listener_;
    bool paused_ = false;
    int step_permits_ = 0;
    bool stopping_ = false;
    RequestId next_id_ = 1;
    std::atomic<int64_t> steps_run_{0};
    std::thread thread_;
};

}  // namespace lorascope::test
