// An Engine that answers inside submit(), on the caller's thread, with a script: by default a few
// tokens echoing the request's input ids, then a Length finish; and the ServedModel serve makes of
// it. For the tests of serve's protocol and routes, and the fuzz target of its HTTP request path:
// no model, no engine thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lorascope/engine.h"
#include "serve_protocol.h"

namespace lorascope::test {

class ScriptedEngine final : public Engine {
public:
    // What a request gets: events sent to `sink` before submit returns; `id` is the request's.
    using Script = std::function<void(RequestId id, const Request& request, RequestSink& sink)>;

    // `record`: keep every request and cancel (tests); a fuzz target running millions keeps none.
    explicit ScriptedEngine(Script script = {}, bool record = true)
        : script_(script ? std::move(script) : echo), record_(record) {
        config_.family = Family::T5;
        generation_.eos_token_ids = {1};
        generation_.decoder_start_token_id = 0;
    }

    RequestId submit(Request request, std::shared_ptr<RequestSink> sink) override {
        const RequestId id = ++next_id_;
        if (record_) {
            std::lock_guard<std::mutex> lock(mutex_);
            submitted_.push_back(request);
        }
        script_(id, request, *sink);
        return id;
    }
    void cancel(RequestId id) override {
        if (!record_) return;
        std::lock_guard<std::mutex> lock(mutex_);
        cancelled_.push_back(id);
    }
    void cancel_all() override {}
    AdapterInfo load_adapter(const std::string&, const std::string&) override { return {}; }
    void unload_adapter(const std::string&) override {}
    std::vector<AdapterInfo> adapters() const override { return {}; }
    void set_stats_listener(std::function<void(const StepStats&)>) override {}
    void set_paused(bool) override {}
    void step_once() override {}
    void wait_idle() override {}
    const ModelConfig& model_config() const override { return config_; }
    const GenerationConfig& generation_config() const override { return generation_; }

    std::vector<Request> submitted() {
        std::lock_guard<std::mutex> lock(mutex_);
        return submitted_;
    }
    std::vector<RequestId> cancelled() {
        std::lock_guard<std::mutex> lock(mutex_);
        return cancelled_;
    }

    // Up to 8 tokens (max_new_tokens, default 4) repeating the input ids, " t<id>" each, then Length.
    static void echo(RequestId id, const Request& request, RequestSink& sink) {
        const int64_t wanted = request.params.max_new_tokens.value_or(4);
        const int64_t n = wanted < 8 ? wanted : 8;
        FinishEvent finish;
        finish.id = id;
        finish.reason = FinishReason::Length;
        for (int64_t i = 0; i < n && !request.input_ids.empty(); ++i) {
            TokenEvent t;
            t.id = id;
            t.token_id = request.input_ids[static_cast<size_t>(i) % request.input_ids.size()];
            t.text_delta = " t" + std::to_string(t.token_id);
            t.logprob = -0.5f;
            finish.text += t.text_delta;
            finish.token_ids.push_back(t.token_id);
            sink.on_token(t);
        }
        finish.usage.prompt_tokens = static_cast<int64_t>(request.input_ids.size());
        finish.usage.generated_tokens = static_cast<int64_t>(finish.token_ids.size());
        sink.on_finish(finish);
    }

private:
    Script script_;
    bool record_;
    ModelConfig config_;
    GenerationConfig generation_;
    std::atomic<RequestId> next_id_{0};
    std::mutex mutex_;
    std::vector<Request> submitted_;
    std::vector<RequestId> cancelled_;
};

// What serve knows of the model the scripted engine stands for: the demo's t5 with one adapter
// ("upper"), under a budget of `max_batch_tokens`.
inline serve::ServedModel scripted_served_model(int64_t max_batch_tokens) {
    serve::ServedModel m;
    m.model_id = "demo-t5";
    m.adapters = {"upper", "sort"};
    m.adapter_ranks = {{"upper", 4}, {"sort", 16}};   // as the demo T5's
    m.decoder_start_token_id = 0;
    m.budget.max_batch_tokens = max_batch_tokens;
    return m;
}

}  // namespace lorascope::test
