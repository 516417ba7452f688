#include "fake_engine.h"

#include <algorithm>
#include <filesystem>

#include "lorascope/error.h"

namespace lorascope::test {

namespace {
const char* const kWords[] = {"alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
                              "iota", "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi"};
uint64_t fnv(const std::string& s, uint64_t h = 1469598103934665603ull) {
    for (unsigned char c : s) { h ^= c; h *= 1099511628211ull; }
    return h;
}
// What a request's tokens are scripted from: its prompt, or its ready ids written out.
std::string script_key(const Request& r) {
    if (r.prompt) return *r.prompt;
    std::string key;
    for (int64_t id : r.input_ids) key += (key.empty() ? "" : " ") + std::to_string(id);
    return key;
}
std::vector<std::string> words_of(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start + 1);
        if (end == std::string::npos) end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end;
    }
    return out;
}
int64_t prompt_tokens(const Request& r) {
    if (!r.prompt) return int64_t(r.input_ids.size());
    return 1 + int64_t(std::count(r.prompt->begin(), r.prompt->end(), ' '));
}
}  // namespace

std::vector<FakeEngine::Token> FakeEngine::script(const std::string& prompt, const std::string& adapter, int64_t n) {
    std::vector<Token> out;
    for (int64_t i = 0; i < n; ++i) {
        uint64_t h = fnv(prompt, 0x9e3779b97f4a7c15ull + uint64_t(i));
        if (!adapter.empty() && i % 3 == 2) h = fnv(adapter, h);
        const int64_t id = int64_t(h % 16);
        out.push_back({id, std::string(i ? " " : "") + kWords[id], -float(h % 97) / 31.0f});
    }
    return out;
}

std::string FakeEngine::expected_text(const std::string& prompt, const std::string& adapter, int64_t n) {
    std::string text;
    for (const auto& t : script(prompt, adapter, n)) text += t.text;
    return text;
}

std::vector<TokenAlternative> FakeEngine::alternatives_of(int64_t id, float logprob, bool leading_space, int64_t k) {
    std::vector<TokenAlternative> out;
    for (int64_t j = 0; j < k; ++j) {
        const int64_t alt = (id + j * 5) % 16;
        out.push_back({alt, logprob - (j ? 0.3f + 0.6f * float(j) : 0.0f), std::string(leading_space ? " " : "") + kWords[alt]});
    }
    return out;
}

std::vector<PromptTokenLogprob> FakeEngine::prompt_logprobs_of(const Request& request, bool causal) {
    std::vector<PromptTokenLogprob> out;
    const std::string text = causal ? request.prompt.value_or("") : request.target.value_or("");
    std::vector<std::string> words = words_of(text);
    if (causal && !request.prompt)
        for (int64_t id : request.input_ids) words.push_back(std::to_string(id));
    for (size_t i = 0; i < words.size(); ++i) {
        const uint64_t h = fnv(request.adapter, fnv(words[i]));
        PromptTokenLogprob t;
        t.token_id = !causal || request.prompt ? int64_t(fnv(words[i]) % 16) : request.input_ids[i];
        t.text = words[i];
        if (!causal || i > 0) t.logprob = -float(h % 120) / 17.0f;
        out.push_back(t);
    }
    return out;
}

std::vector<Request> FakeEngine::submitted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return submitted_;
}

std::unique_ptr<Engine> FakeEngine::create(const EngineOptions& options, FakeEngineSettings settings) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(options.model_dir))
        throw Error(ErrorKind::NotFound, options.model_dir, "not a directory");
    if (!fs::exists(fs::path(options.model_dir) / "config.json"))
        throw Error(ErrorKind::NotFound, (fs::path(options.model_dir) / "config.json").string(),
                    "missing: not a Hugging Face checkpoint directory");
    return std::make_unique<FakeEngine>(options, settings);
}

FakeEngine::FakeEngine(const EngineOptions& options, FakeEngineSettings settings)
    : options_(options), settings_(settings) {
    model_config_.family = Family::T5;
    model_config_.model_type = "t5";
    model_config_.name_or_path = "fake-t5";
    T5Config t5;
    t5.vocab_size = 16;
    t5.d_model = 32;
    t5.num_layers = t5.num_decoder_layers = 2;
    t5.num_heads = 4;
    model_config_.arch = t5;
    if (settings.causal) {
        BloomConfig bloom;
        bloom.vocab_size = 16;
        model_config_.family = Family::Bloom;
        model_config_.model_type = "bloom";
        model_config_.name_or_path = "fake-bloom";
        model_config_.arch = bloom;
    } else if (settings.bart_positions > 0) {
        BartConfig bart;
        bart.vocab_size = 16;
        bart.max_position_embeddings = settings.bart_positions;
        model_config_.family = Family::Bart;
        model_config_.model_type = "bart";
        model_config_.arch = bart;
    }
    generation_config_.max_new_tokens = settings.default_new_tokens;
    generation_config_.eos_token_ids = {1};
    generation_config_.decoder_start_token_id = 0;
    thread_ = std::thread([this] { run(); });
}

FakeEngine::~FakeEngine() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    // What is left is cancelled, as the real engine's destructor promises.
    for (auto& row : running_) finish(row, FinishReason::Cancelled);
    for (auto& row : queued_) finish(row, FinishReason::Cancelled);
}

RequestId FakeEngine::submit(Request request, std::shared_ptr<RequestSink> sink) {
    std::lock_guard<std::mutex> lock(mutex_);
    Row row;
    row.id = next_id_++;
    const int64_t n = request.params.max_new_tokens.value_or(settings_.default_new_tokens);
    // A blend is scripted as an adapter of its own, so that its column differs from the others.
    const std::string scripted_adapter = request.merge ? merge_name(*request.merge) : request.adapter;
    row.tokens = script(script_key(request), scripted_adapter, n);
    submitted_.push_back(request);
    row.request = std::move(request);
    row.sink = std::move(sink);
    row.submitted = std::chrono::steady_clock::now();
    const RequestId id = row.id;
    if (row.request.merge)
        for (const std::string& name : row.request.merge->ids)
            if (!adapters_.count(name)) {
                Row failed = std::move(row);
                finish(failed, FinishReason::Error, "unknown adapter '" + name + "' in the merge");
                return id;
            }
    if (!row.request.adapter.empty() && !adapters_.count(row.request.adapter)) {
        Row failed = std::move(row);
        finish(failed, FinishReason::Error, "unknown adapter '" + failed.request.adapter + "'");
        return id;
    }
    queued_.push_back(std::move(row));
    wake_.notify_all();
    return id;
}

void FakeEngine::cancel(RequestId id) {
    std::lock_guard<std::mutex> lock(mutex_);
    cancel_requests_.push_back(id);
    wake_.notify_all();
}

void FakeEngine::cancel_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& r : queued_) cancel_requests_.push_back(r.id);
    for (const auto& r : running_) cancel_requests_.push_back(r.id);
    wake_.notify_all();
}

AdapterInfo FakeEngine::load_adapter(const std::string& name, const std::string& dir) {
    namespace fs = std::filesystem;
    if (!fs::exists(fs::path(dir) / "adapter_config.json"))
        throw Error(ErrorKind::NotFound, (fs::path(dir) / "adapter_config.json").string(), "missing");
    AdapterInfo info;
    info.name = name;
    info.path = dir;
    info.rank = 4 + int64_t(adapters().size()) * 4;
    info.alpha = double(info.rank * 2);
    info.targets = {"q", "v"};
    info.parameters = info.rank * 2 * 32 * 2 * 4;
    info.bytes = info.parameters * 4;
    info.loaded = true;
    std::lock_guard<std::mutex> lock(mutex_);
    adapters_[name] = info;
    return info;
}

void FakeEngine::unload_adapter(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!adapters_.erase(name)) throw Error(ErrorKind::NotFound, name, "no such adapter");
}

std::vector<AdapterInfo> FakeEngine::adapters() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<AdapterInfo> out;
    for (const auto& [_, info] : adapters_) out.push_back(info);
    return out;
}

void FakeEngine::set_stats_listener(std::function<void(const StepStats&)> listener) {
    std::lock_guard<std::mutex> lock(mutex_);
    listener_ = std::move(listener);
}

void FakeEngine::set_paused(bool paused) {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = paused;
    step_permits_ = 0;
    wake_.notify_all();
}

void FakeEngine::step_once() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++step_permits_;
    wake_.notify_all();
}

void FakeEngine::wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return stopping_ || (queued_.empty() && running_.empty()); });
}

void FakeEngine::finish(Row& row, FinishReason reason, const std::string& error) {
    FinishEvent e;
    e.id = row.id;
    e.reason = reason;
    e.error = error;
    const int64_t k = row.request.params.top_alternatives.value_or(0);
    for (size_t i = 0; i < row.produced && reason != FinishReason::Error; ++i) {
        e.text += row.tokens[i].text;
        e.token_ids.push_back(row.tokens[i].id);
        e.logprobs.push_back(row.tokens[i].logprob);
        if (k > 0) e.alternatives.push_back(alternatives_of(row.tokens[i].id, row.tokens[i].logprob, i > 0, k));
    }
    if (row.request.params.prompt_logprobs.value_or(false) && reason != FinishReason::Error)
        e.prompt_logprobs = prompt_logprobs_of(row.request, settings_.causal);
    e.usage.prompt_tokens = prompt_tokens(row.request);
    e.usage.generated_tokens = int64_t(row.produced);
    const auto now = std::chrono::steady_clock::now();
    e.usage.total_ms = std::chrono::duration<double, std::milli>(now - row.submitted).count();
    if (row.produced)
        e.usage.time_to_first_token_ms = std::chrono::duration<double, std::milli>(row.first_token - row.submitted).count();
    row.sink->on_finish(e);
}

void FakeEngine::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] {
            const bool work = !queued_.empty() || !running_.empty() || !cancel_requests_.empty();
            return stopping_ || (work && (!paused_ || step_permits_ > 0));
        });
        if (stopping_) return;
        if (paused_) --step_permits_;
        const auto t0 = std::chrono::steady_clock::now();

        // Step boundary: filter cancelled rows, then admit (concatenate) queued ones.
        auto cancelled = [this](RequestId id) {
            return std::find(cancel_requests_.begin(), cancel_requests_.end(), id) != cancel_requests_.end();
        };
        for (auto it = running_.begin(); it != running_.end();) {
            if (cancelled(it->id)) { finish(*it, FinishReason::Cancelled); it = running_.erase(it); }
            else ++it;
        }
        for (auto it = queued_.begin(); it != queued_.end();) {
            if (cancelled(it->id)) { finish(*it, FinishReason::Cancelled); it = queued_.erase(it); }
            else ++it;
        }
        cancel_requests_.clear();
        StepStats stats;
        stats.step = steps_run_ + 1;
        int64_t longest_prompt = 0, joined = 0, prompt_sum = 0;
        std::vector<bool> prefill(running_.size(), false);
        while (!queued_.empty() && int64_t(running_.size()) < options_.max_batch_size) {
            running_.push_back(std::move(queued_.front()));
            queued_.pop_front();
            prefill.push_back(true);
            const int64_t p = prompt_tokens(running_.back().request);
            longest_prompt = std::max(longest_prompt, p);
            prompt_sum += p;
            ++joined;
        }
        stats.prefill_tokens = prompt_sum;
        stats.padded_tokens = longest_prompt * joined - prompt_sum;
        stats.decode_tokens = int64_t(running_.size()) - joined;
        stats.rows = int64_t(running_.size());
        stats.queue_depth = int64_t(queued_.size());
        std::map<std::string, int64_t> per_adapter;
        for (size_t i = 0; i < running_.size(); ++i) {
            Row& row = running_[i];
            stats.row_requests.push_back(row.id);
            stats.row_prefill.push_back(prefill[i]);
            ++per_adapter[row.request.adapter];
            stats.kv_bytes_in_use += (prompt_tokens(row.request) + int64_t(row.produced) + 1) * 512;
            if (row.produced < row.tokens.size()) {
                const Token& t = row.tokens[row.produced++];
                if (row.produced == 1) row.first_token = std::chrono::steady_clock::now();
                TokenEvent e{row.id, t.id, t.text, t.logprob, false, {}, {}};
                if (const int64_t k = row.request.params.top_alternatives.value_or(0); k > 0)
                    e.alternatives = alternatives_of(t.id, t.logprob, row.produced > 1, k);
                row.sink->on_token(e);
            }
        }
        stats.kv_bytes_allocated = stats.kv_bytes_in_use + (options_.max_batch_size - stats.rows) * 4096;
        stats.rows_per_adapter.assign(per_adapter.begin(), per_adapter.end());
        for (auto it = running_.begin(); it != running_.end();) {
            if (settings_.fail_after_tokens > 0 && int64_t(it->produced) >= settings_.fail_after_tokens) {
                finish(*it, FinishReason::Error, "decoder failure after " + std::to_string(it->produced) + " tokens");
                it = running_.erase(it);
            } else if (it->produced >= it->tokens.size()) {
                finish(*it, FinishReason::Length);
                it = running_.erase(it);
            } else {
                ++it;
            }
        }
        ++steps_run_;
        auto listener = listener_;
        lock.unlock();
        if (settings_.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settings_.step_delay_ms));
        stats.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (listener) listener(stats);
        lock.lock();
        if (queued_.empty() && running_.empty()) idle_.notify_all();
    }
}

}  // namespace lorascope::test
