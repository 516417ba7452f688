// One request as the engine thread keeps it: its resolved parameters, the ids Hugging Face's
// generate() would hold for it, its sampler state, detokenizer and stopping criteria.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "adapters/adapter_registry.h"
#include "lorascope/engine.h"
#include "models/kv_pool.h"
#include "lorascope/params.h"
#include "lorascope/tokenizer.h"
#include "sampling/alternatives.h"
#include "sampling/beam_search.h"
#include "sampling/logits_processor.h"
#include "sampling/next_token_chooser.h"
#include "sampling/stopping.h"
#include "batching/admission.h"

namespace lorascope::models { class Model; }

namespace lorascope::engine_detail {

using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b);
double ms_since(Clock::time_point start);   // from `start` to now

// What a request's prompt can be made from besides its own ids: the model's tokenizer, and its chat
// templates or why it has none (the error a conversation request finishes with).
struct PromptSources {
    const Tokenizer* tokenizer = nullptr;
    const ModelChatTemplates* chat_templates = nullptr;
    std::string no_chat_templates;
};

// A token's text as it reads after other text (SentencePiece keeps its leading space), a partial
// UTF-8 character as U+FFFD; empty without a tokenizer or outside the vocabulary.
std::string token_piece(const Tokenizer* tokenizer, int64_t id);
std::vector<TokenAlternative> with_text(const std::vector<sampling::Alternative>& alternatives,
                                        const Tokenizer* tokenizer);

struct LiveRequest {
    RequestId id = 0;
    std::string client_id;
    std::shared_ptr<RequestSink> sink;
    ResolvedGenerationParams params;

    std::vector<int64_t> prompt_ids;   // encoder input (seq2seq) or prompt (decoder-only)
    // HF's input_ids: decoder start + generated (seq2seq) or prompt + generated (decoder-only).
    std::vector<int64_t> input_ids;
    int64_t input_ids_length = 0;
    int64_t max_new_tokens = 0;
    // Seq2seq: Request::decoder_prefix_ids' length. input_ids begins with them after the start
    // token; they are fed to the decoder once the encoder has run, before the first decoding step.
    int64_t decoder_prefix = 0;

    // Beam search: the request's beams are consecutive batch rows, each with its own ids. Tokens
    // stream only when the search ends (a beam's tokens are not final until then).
    std::unique_ptr<sampling::BeamSearch> beams;
    // Rows of a multi-row request (beams, or num_return_sequences sampled sequences), each with
    // its own ids; empty for single-row requests.
    std::vector<std::vector<int64_t>> beam_ids;
    // Sampling with num_return_sequences > 1: per row, whether it ended and its logprobs. Like
    // beams, the rows stream (row 0) when every row has ended.
    std::vector<bool> sample_row_done;
    std::vector<std::vector<float>> sample_row_logprobs;
    std::vector<std::vector<std::vector<TokenAlternative>>> sample_row_alternatives;   // when asked
    // num_return_sequences > 1: all returned sequences, filled when the search ends.
    std::vector<ReturnedSequence> returned;

    std::vector<int64_t> generated;
    std::vector<float> logprobs;
    std::vector<std::vector<TokenAlternative>> alternatives;   // params.top_alternatives, per generated token
    // params.prompt_logprobs: the target scored for an encoder-decoder model, and what the prompt
    // pass (engine/prompt_scoring.h) found once it ran.
    std::vector<int64_t> target_ids;
    std::vector<PromptTokenLogprob> prompt_logprobs;
    bool prompt_scored = false;
    at::Generator generator;           // defined for sampling requests only
    std::unique_ptr<StreamingDetokenizer> detokenizer;
    std::unique_ptr<sampling::StoppingCriteria> stopping;
    // The adapter the request names ("" = base) and, once admitted, its pin on that adapter's
    // weights; the pin goes when the request leaves the batch (this object is destroyed).
    std::string adapter_name;
    adapters::AdapterLease adapter;

    Clock::time_point submitted, admitted, first_token;
    int64_t skipped = 0;               // admission passes that went over it
    int64_t intake = 0;                // the step boundary at which the engine took it (RequestScheduler)
    bool finished = false;

    // Once admitted: the KV-cache blocks reserved for it (models::KvPool::try_reserve), its rows'
    // cache while it is prefilled (one row; beams fork when it joins the running batch), and how
    // many prompt tokens are in that cache (decoder-only prompts are prefilled in chunks; their
    // last token is fed by the first decoding step) or whether the encoder ran (seq2seq).
    int64_t kv_blocks = 0;
    models::DecodeState cache;
    int64_t prefilled = 0;
    bool encoded = false;
    bool encoding = false;             // in an encoder job (engine/batch_runner.h)
    bool joined_this_step = false;
    // An evicted adapter being reloaded off the engine thread (the request waits meanwhile).
    std::shared_ptr<struct AdapterLoad> adapter_load;

    // Renders a conversation, tokenizes and validates; throws lorascope::Error with a message for
    // the client. Runs on the submitting thread: the model, tokenizer and templates are immutable.
    // `budget` bounds its rows and lengths (check_request_budget) before anything is sized by them.
    void prepare(const Request& request, const models::Model& model, const PromptSources& sources,
                 const RequestBudget& budget);

    batching::Demand demand() const;
    // KV-cache blocks this request may occupy at most: its rows' self-attention positions (prompt
    // and new tokens for decoder-only models, new tokens for seq2seq) and its encoder memory.
    int64_t kv_blocks_needed(bool encoder_decoder) const;
    std::vector<RequestId> ids() const { return {id}; }
    // Tokens this request is certain to decode still (each a step of its row): what is left of
    // max_new_tokens when neither EOS nor a stop string can end it, else of min_new_tokens; none
    // for several rows (a beam search's early stopping) or a finished request. The latency policy counts them.
    int64_t certain_tokens_left() const;
    int64_t rows() const { return beam_ids.empty() ? 1 : static_cast<int64_t>(beam_ids.size()); }
    bool multi_row() const { return !beam_ids.empty(); }
    // Seq2seq: still waiting for an encoder job to take its prompt.
    bool awaiting_encoder() const { return !finished && !encoded && !encoding; }
    // What the batch rows of this request feed the model next, and how the processors see them.
    void append_last_tokens(std::vector<int64_t>& out) const;
    void append_logits_rows(std::vector<sampling::LogitsRow>& out) const;

    // One beam-search step on this request's rows of raw logits ([rows(), vocab] fp32). Returns,
    // for each row, the row it continues (for reordering the caches); finishes the request when
    // the search is over, streaming the best hypothesis' tokens then.
    std::vector<int64_t> beam_step(const at::Tensor& logits, const Tokenizer* tokenizer);
    // One step of num_return_sequences sampled rows ([rows(), vocab] raw logits), as transformers'
    // _sample on the expanded batch: every row is processed and drawn from the request's one
    // generator in row order, rows that ended too (HF keeps drawing for them), so each row draws
    // what HF's row draws. Rows never move: returns the identity.
    std::vector<int64_t> sample_rows_step(const at::Tensor& logits, const Tokenizer* tokenizer);
    void finish_sampled_rows(const Tokenizer* tokenizer);

    // Records the chosen token (and its alternatives, when asked for), streams its text and
    // finishes the request when a criterion says so.
    void accept(const sampling::TokenChoice& choice, const Tokenizer* tokenizer,
                const std::vector<TokenAlternative>* token_alternatives = nullptr);
    // Sends the one FinishEvent (later calls do nothing).
    void finish(FinishReason reason, const std::string& error = {});
};

}  // namespace lorascope::engine_detail
