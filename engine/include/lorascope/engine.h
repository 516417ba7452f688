// The engine: one model, an adapter registry and a background thread that batches requests
// continuously. Thread-safe: submit, cancel and adapter calls may come from any thread at any time.
// Sinks are called on the engine thread; they must be quick (post to a queue, never block).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/adapter.h"
#include "lorascope/chat.h"
#include "lorascope/config.h"
#include "lorascope/params.h"

namespace lorascope {

using RequestId = uint64_t;

struct Request {
    std::string client_id;               // the caller's own id (JSON Lines "id"), echoed back
    std::optional<std::string> prompt;   // text, tokenized with the model's tokenizer ...
    std::vector<int64_t> input_ids;      // ... or ready ids (used when prompt is empty)
    // ... or a conversation: rendered with the model's chat template (tokenizer_config.json) and
    // add_generation_prompt, then tokenized as transformers' apply_chat_template(tokenize=True)
    // does (no special tokens added: the template writes them). A model without a template, or the
    // template's refusal (raise_exception), finishes this request with that error.
    std::optional<Conversation> conversation;
    std::string adapter;                 // registered adapter name; empty = the base model
    GenerationParams params;             // unspecified fields come from generation_config.json
    // Registered adapters merged for this request (LoRAX's merged_adapters) instead of `adapter`
    // (give one or the other). The engine builds the merge once and keeps it while it fits the
    // adapter memory budget; requests naming the same merge share it.
    std::optional<AdapterMerge> merge;
    // Encoder-decoder models with params.prompt_logprobs: the decoder text whose tokens are scored
    // (FinishEvent::prompt_logprobs), as text (tokenized like Hugging Face's text_target) or ids.
    std::optional<std::string> target;
    std::vector<int64_t> target_ids;
    // Encoder-decoder models: tokens forced at the start of the decoder, after its start token, as
    // Hugging Face's generate(..., decoder_input_ids=[start] + prefix) takes them: generation
    // continues them (a fork of another request's output, "what if it had said X"). They are input,
    // not output: no token events, not in the text, not counted by max_new_tokens; the logits
    // processors see them as HF's do. Decoder-only models take such tokens as part of the prompt.
    std::vector<int64_t> decoder_prefix_ids;
};

// One of the most likely tokens at a generated position (params.top_alternatives).
struct TokenAlternative {
    int64_t token_id = 0;
    float logprob = 0.0f;    // log_softmax of the processed scores the token was chosen from
    std::string text;        // the token's text after other text (its leading space kept); lossy UTF-8
};

// A prompt token (decoder-only) or target token (encoder-decoder) with its log-probability under
// the model given the tokens before it (params.prompt_logprobs).
struct PromptTokenLogprob {
    int64_t token_id = 0;
    std::string text;                 // as TokenAlternative::text
    std::optional<float> logprob;     // none for a decoder-only prompt's first token
};

struct TokenEvent {
    RequestId id = 0;
    int64_t token_id = 0;
    std::string text_delta;   // from the streaming detokenizer; may be empty (held back)
    float logprob = 0.0f;
    bool special = false;
    std::string client_id;    // Request::client_id, echoed
    std::vector<TokenAlternative> alternatives;   // params.top_alternatives of them, most likely first
};

enum class FinishReason { Eos, Length, Stop, Cancelled, Error };
const char* to_string(FinishReason reason);   // lorascope/finish_json.h reads it back

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t generated_tokens = 0;
    double queue_ms = 0;          // submit -> admitted
    double time_to_first_token_ms = 0;
    double total_ms = 0;          // submit -> finish
};

// One of the sequences a request with num_return_sequences > 1 (or best_of > 1) returns.
struct ReturnedSequence {
    std::string text;                    // decoded as FinishEvent::text
    std::vector<int64_t> token_ids;      // as FinishEvent::token_ids
    // Beam search: sum_logprobs / generated_len ** length_penalty. best_of: the mean log-probability
    // per generated token by which the candidates were ranked.
    std::optional<double> score;
    std::vector<float> logprobs;                             // sampled rows, when params.logprobs
    std::vector<std::vector<TokenAlternative>> alternatives; // sampled rows, when params.top_alternatives
};

struct FinishEvent {
    RequestId id = 0;
    FinishReason reason = FinishReason::Eos;
    std::string text;                    // full text, stop sequence excluded
    std::string stop_sequence;           // reason == Stop: the stop sequence that ended it
    std::vector<int64_t> token_ids;      // generated ids (no decoder start; eos included when generated)
    std::vector<float> logprobs;         // when params.logprobs
    // params.top_alternatives: per generated token, its alternatives (as TokenEvent's).
    std::vector<std::vector<TokenAlternative>> alternatives;
    // params.prompt_logprobs: every prompt token (decoder-only) or target token (encoder-decoder),
    // after truncation.
    std::vector<PromptTokenLogprob> prompt_logprobs;
    // num_return_sequences > 1: every returned sequence, best first; [0] is text/token_ids above.
    // best_of > 1: every candidate, the one returned first, the others in the order drawn.
    // Empty otherwise.
    std::vector<ReturnedSequence> sequences;
    Usage usage;
    std::string error;                   // when reason == Error
    std::string client_id;               // Request::client_id, echoed
};

// A backend that retries a request's connection says so (the window's remote backend does; the
// local engine never calls it): attempt n >= 1 while the n-th retry waits or runs, 0 once the
// server answers again.
struct RetryEvent {
    RequestId id = 0;
    int attempt = 0;
    std::string reason;                  // why the last attempt failed ("" when attempt == 0)
};

class RequestSink {
public:
    virtual ~RequestSink() = default;
    virtual void on_token(const TokenEvent& event) = 0;
    virtual void on_finish(const FinishEvent& event) = 0;  // exactly once per request
    virtual void on_retry(const RetryEvent&) {}           // before on_finish, any number of times
};

// Published after every engine step.
struct StepStats {
    int64_t step = 0;
    double wall_ms = 0;
    double prefill_ms = 0;             // of wall_ms, what its prefill passes took
    int threads = 0;                   // compute threads the step ran on (EngineOptions::adaptive_threads)
    int64_t rows = 0;
    int64_t prefill_tokens = 0;        // prompt tokens computed in this step (encoder passes, prompt chunks)
    int64_t prefill_tokens_deferred = 0;  // prompt tokens of admitted requests left for later steps (prefill budget)
    int64_t decode_tokens = 0;
    int64_t padded_tokens = 0;         // positions computed for padding in this step
    int64_t kv_bytes_allocated = 0;    // KV-cache blocks in use, in bytes
    int64_t kv_bytes_in_use = 0;       // of which valid positions
    int64_t kv_blocks_total = 0;       // the KV cache's capacity, in blocks of kv_block_size positions
    int64_t kv_blocks_used = 0;
    int64_t kv_block_size = 0;
    int64_t cache_bytes_moved = 0;     // copied by cache maintenance (join, leave, beam reorder, copy on write)
    int64_t cache_bytes_prefilled = 0; // K/V that newcomers' prompts wrote into their own blocks
    int64_t queue_depth = 0;
    int64_t adapter_bytes = 0;
    // Why the step prefilled what it did (the budget in time, EngineOptions::tpot_target_ms):
    int64_t row_limit = 0;             // the rows the batch could hold, newcomers being prefilled included
    double prefill_margin = 0;         // under a target: the step's prefill was planned against target / this (0: none)
    double row_plan_ms = 0;            // under a target: the row limit planned decoding steps of this long (0: none)
    bool bulk_prefill = false;         // the step prefilled whole prompts past its plan (a bulk step)
    std::vector<std::pair<std::string, int64_t>> rows_per_adapter;  // "" = base
    std::vector<RequestId> row_requests;                             // request held by each row
    std::vector<bool> row_prefill;                                   // row joined (or is being prefilled) in this step
    std::vector<int64_t> row_kv_blocks;                              // KV-cache blocks each row references
};

// EngineOptions::prefill_budget_tokens: the budget in time (the default).
constexpr int64_t kPrefillBudgetInTime = -1;

// EngineOptions::queue_order: which waiting request joins first.
enum class QueueOrder {
    Arrival,  // first come, first served
    // The requests that arrived together (at one step boundary) join shortest first (by
    // max_new_tokens and, decoder-only, prompt length, weighed by what prefill costs beside
    // decoding), and the queue's last batch's worth longest first (batching/admission.h,
    // packed_order).
    Pack,
};

struct EngineOptions {
    std::string model_dir;
    std::string device = "cpu";      // "cpu" or "cuda[:N]"
    // "float32", "bfloat16", "int8" (CPU) or "float16". On the CPU it names the type of the linears'
    // packed weights and products (norms, attention and the residual stream stay float32; the KV
    // cache follows kv_cache_dtype); on CUDA the whole model is converted (int8 is CPU-only).
    // cpu_compute_types() (runtime.h) says which this CPU runs.
    std::string dtype = "float32";
    // The type the KV cache stores: "auto" is bfloat16 under CPU int8 or bfloat16 products (half
    // the cache's memory and of what attention reads; attention itself stays float32) and the
    // model's type otherwise, so float32 stays HF-exact; or "float32", "bfloat16", "float16" (CUDA).
    std::string kv_cache_dtype = "auto";
    int threads = 0;                 // <= 0: all cores
    // Our kernels' pool computes on fewer threads while other programs keep cores busy (at most
    // `threads`; checked between steps from /proc on Linux): a step's many short parallel regions
    // each wait for their slowest thread, and a thread that shares its core with a neighbour is the
    // slowest by a time slice (docs/benchmarks.md, issue 28). The pool's results do not depend on
    // its thread count; ATen's (float32 products) do, so its count stays `threads`. false: always
    // `threads`.
    bool adaptive_threads = true;
    int64_t max_batch_size = 32;
    int64_t max_batch_tokens = 16384;  // counts padding
    bool static_batching = false;      // no joins until the running batch drains (for comparison)
    // Arrival (the default): first come, first served. Pack: the requests that arrived at the same
    // step boundary (a batch submitted at once) join shortest first by max_new_tokens (plus, for a
    // decoder-only model, their prompt's tokens, each weighed by what its prefill costs against a
    // row's share of a step) while more wait than max_batch_size rows hold, so that most answers
    // come soonest; the last batch's worth (all of it joins as running rows leave) joins longest
    // first, so that the batch's last steps decode short requests rather than one long one beside
    // empty rows. A request is only ever passed by requests that arrived with it, so nothing
    // starves and a stream keeps its order. The longest of a batch start last. Where EOS ends
    // requests well before max_new_tokens, the order knows less (it is all that is known before
    // decoding). Measured: docs/benchmarks.md, issue 33.
    QueueOrder queue_order = QueueOrder::Arrival;
    // Bytes of resident adapter weights; 0 = unlimited. Soft: idle adapters are evicted least
    // recently used first, but adapters pinned by running requests stay, even over the budget.
    int64_t adapter_memory_budget = 0;
    // The KV cache's size in MiB; 0 = from the model and the free memory. Admission reserves what
    // each request may occupy at most and queues what does not fit.
    int64_t kv_cache_mb = 0;
    // Prompt work per step, so that running rows keep decoding while newcomers are prefilled:
    // decoder-only prompts are prefilled in chunks, and seq2seq encoder passes run a few layers per
    // step (at least one). While no row decodes, newcomers are prefilled at once.
    // kPrefillBudgetInTime (the default): the budget in time. The engine measures what a decoding
    // row, a prompt position and an encoder layer-position cost as it runs, and each step prefills
    // what keeps it within tpot_target_ms (below) or, without a target, within 1.3x of a typical
    // decoding step (its rows' mean, weighted as the token gaps weigh them), filling free rows as fast
    // as that allows, with a backlog of prompts prefilled whole in a small share of the gaps
    // (tpot_tail_share, below; batching/time_budget.h). A step's
    // time, unlike a token count, means the same on one thread, two or a GPU.
    // > 0: the token budget: at most this many prompt tokens per step, applied while rows decode
    // and more rows decode than wait to join (docs/benchmarks.md, issue 14: 16 kept a two-core step
    // that prefills within ~1.5x of one that does not). 0: no limit (every newcomer is prefilled
    // whole in the step it joins).
    // With a time budget the steps depend on measured times, so a run's step stream differs from
    // run to run; a token budget or none keeps it a function of the workload (each request's tokens
    // are the same under every policy).
    int64_t prefill_budget_tokens = kPrefillBudgetInTime;
    // Time per output token the running rows should see, in ms: every running row gets one token
    // per step, so this bounds the step's time. The engine admits rows, and prefill work into a
    // step, only while the step's predicted time stays within it (the prefill with a margin for how
    // far its steps have strayed from their predictions); newcomers wait for rows to leave
    // rather than slow the running rows down. Fewer rows give faster steps; more rows give earlier
    // first tokens and more throughput where steps are memory-bound. 0: no target. Needs the budget
    // in time and continuous batching. With a target, create() also times two throwaway decoding
    // steps (one row, max_batch_size rows) before it returns, so that the first requests are
    // admitted under a measured limit: rows once admitted cannot be sent back.
    double tpot_target_ms = 0;
    // The target is a 95th percentile (the per-token p95 the reports give): up to this share of
    // token gaps may run over it, spent on steps that prefill the waiting newcomers whole (at most
    // 8 targets long, when the recent gaps over the target leave room for one more such step), so
    // that the batch holds the rows whose decoding fits the target instead of keeping room for
    // prefill in every step. 0: every step stays within the target (fewer rows). In [0, 0.2].
    // A gap counts as over when its step passed the target by more than 5% of it: steps of decoding
    // alone planned up to the target run a few percent either side of it on a shared CPU, and that
    // noise left no share to the steps that refill the batch. So the per-token p95 may land up to
    // ~1.05x of the target (docs/benchmarks.md, issue 33). While requests queue behind the
    // newcomers, such a step waits until its gaps over the target are within this share of the
    // gaps the newcomers will decode (more newcomers come as rows leave), but for the first after a
    // row leaves (the queue's head, whom every queued request waits behind); half the share stays
    // for such steps when the noise has spent the rest. While steps of decoding alone put more than
    // that other half of the gaps past 1.05x the target, the rows are planned for steps that all
    // but 2% of such steps keep within it (their measured spread).
    // Without a target, such steps drain a backlog of prompts that capped steps would take more than
    // 7 steps over, within at most 0.02 of the gaps (0: no step passes the cap but to fill the batch).
    double tpot_tail_share = 0.04;
    // Decoder-only prompts are prefilled in chunks of this many tokens; 0: the token budget, but
    // at least 128 (each chunk pass reads the weights once more), or under a time-per-token target
    // 32 (a 128-token chunk of BLOOM costs about as much as a whole decoding step of 32 rows, so it
    // could never fit beside one). The same for every request, so that a request's numbers do not
    // depend on its neighbours.
    int64_t prefill_chunk_tokens = 0;
    // Called on the loading thread while Engine::create reads the checkpoint: after each of its
    // tensors is first read, with how many have been read of all the file holds (some, tied or
    // unused, may never be). Returning false stops the load: create throws Error(Cancelled).
    std::function<bool(int64_t tensors_read, int64_t tensors_total)> load_progress;
};

class Engine {
public:
    // Loads the model (throws lorascope::Error naming the directory/file) and starts the thread.
    static std::unique_ptr<Engine> create(const EngineOptions& options);
    virtual ~Engine() = default;   // cancels what is left and joins the thread

    // Returns at once. Invalid requests finish with FinishReason::Error through the sink.
    virtual RequestId submit(Request request, std::shared_ptr<RequestSink> sink) = 0;
    virtual void cancel(RequestId id) = 0;
    virtual void cancel_all() = 0;

    virtual AdapterInfo load_adapter(const std::string& name, const std::string& dir) = 0;
    // Waits for running requests that use the adapter to finish; queued ones fail with an error.
    virtual void unload_adapter(const std::string& name) = 0;
    virtual std::vector<AdapterInfo> adapters() const = 0;

    virtual void set_stats_listener(std::function<void(const StepStats&)> listener) = 0;
    // Holds the engine between steps; step_once() lets exactly one step run while paused.
    virtual void set_paused(bool paused) = 0;
    virtual void step_once() = 0;
    virtual void wait_idle() = 0;   // blocks until no request is queued or running

    virtual const ModelConfig& model_config() const = 0;
    virtual const GenerationConfig& generation_config() const = 0;
    // The model's chat templates, for showing the prompt a conversation becomes; null when the
    // model has none (or this engine renders no conversations itself, e.g. a remote one).
    virtual const ModelChatTemplates* chat_templates() const { return nullptr; }
};

}  // namespace lorascope
