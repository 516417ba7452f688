// The running batch: admitted requests being prefilled under the per-step budget, the rows that
// decode every step, and their KV cache (one pool, a block table per row). Joining, leaving and
// beam reordering are block-table bookkeeping (models/kv_pool.h); a failure in a pass ends exactly
// the requests whose rows cause it (the pass is retried on halves until they are found).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/multi_lora_hook.h"
#include "engine/live_request.h"
#include "engine/step_batch.h"
#include "lorascope/engine.h"
#include "lorascope/tokenizer.h"
#include "models/model.h"
#include "batching/admission.h"
#include "batching/step_costs.h"
#include "batching/time_budget.h"

namespace lorascope::engine_detail {

class BatchRunner {
public:
    // prefill_budget_tokens: kPrefillBudgetInTime (< 0), the budget in time under `time_policy`;
    // > 0 tokens per step; 0 no limit (lorascope/engine.h).
    BatchRunner(const models::Model& model, std::shared_ptr<models::KvPool> pool, const Tokenizer* tokenizer,
                int64_t prefill_budget_tokens, int64_t prefill_chunk_tokens,
                const batching::TimePolicy& time_policy = {});
    ~BatchRunner();

    // An admitted request (KV blocks reserved, adapter pinned): prefilled from the next step on.
    void add(std::unique_ptr<LiveRequest> request);
    bool empty() const { return running_.empty() && prefilling_.empty(); }
    batching::BatchShape shape() const;

    // One step: prefill work under the budget, newcomers whose prompt is in the cache join, every
    // running row decodes one token, finished requests leave.
    // `queued`: requests still in the engine's queue behind the admitted ones (a bulk step under a
    // target waits until it is worth its gaps only while some are).
    void step(StepStats& stats, int64_t queued = 0);
    // Requests `wanted` picks finish as cancelled; their rows leave at drop_finished().
    void cancel(const std::function<bool(RequestId)>& wanted);
    // Finished requests leave the batch: their blocks go back to the pool (no copy). A leave that
    // fails is retried at the next step boundary.
    void drop_finished();
    // Every request ends with this reason (engine shutdown, or an unexpected failure of a step).
    void finish_all(FinishReason reason, const std::string& error = {});
    void cache_stats(StepStats& stats);

    // Under a time-per-token target: the rows the batch may hold now (batching::row_limit), with
    // one unit of prefill of a newcomer of `prompt_tokens` (the queue's front) beside them, and the
    // decoding step that limit plans for (TimePolicy::rows_ms: the target less the decode-only
    // steps' spread). Without a target: `max_rows`, and no plan (0).
    struct RowLimit {
        int64_t rows = 0;
        double plan_ms = 0;
    };
    RowLimit row_limit(int64_t prompt_tokens, int64_t max_rows) const;
    // What a prompt token weighs against a token to decode, for QueueOrder::Pack
    // (batching::packed_order): a prompt token's prefill, as the fits measure it, over one row's
    // share of a step of `max_rows` rows; kPromptWeightPrior until both have a sample; 0 for an
    // encoder-decoder model.
    double prompt_weight(int64_t max_rows) const;
    // Under a time-per-token target, before any request: times throwaway decoding steps of 1 and
    // `max_rows` rows (engine/decode_calibration.h) into StepCosts::decode_prior, so that the first
    // wave is admitted under a measured row limit. Nothing otherwise.
    void calibrate(int64_t max_rows);
    const batching::StepCosts& costs() const { return costs_; }

    const models::KvPool& pool() const { return *pool_; }
    int64_t lora_stack_bytes() const { return lora_stack_.bytes(); }

private:
    // Seq2seq: encoder passes as jobs that run some of their units (layers) per step.
    struct EncodeJob {
        std::vector<LiveRequest*> members;   // owned by prefilling_, which keeps them until the job ends
        models::Model::EncoderWork work;
        std::unique_ptr<adapters::MultiLoraHook> hook;  // holds the members' adapter weights
        int64_t cost = 0;                    // padded positions of one unit: rows x longest prompt
        int64_t real = 0;                    // of which prompt tokens
    };

    // The step's prefill limit: `work` in prompt tokens (decoder-only) or prompt tokens x encoder
    // units. Forced: at least one piece or unit even when none fits; not forced (a latency target):
    // a piece that does not fit waits.
    struct StepBudget {
        bool unlimited = true;
        int64_t work = 0;
        bool forced = true;
        bool bulk = false;   // the tail pays for this step's prompts, whole (time_budget.h)
    };
    StepBudget step_budget() const;
    double backlog_ms() const;
    bool time_budget() const { return prefill_budget_ < 0; }
    // The policy with its margin: under a target, the spread of the steps so far (StepSpread).
    batching::TimePolicy policy() const;
    // Adds what `fit` predicted for `x` (before it learns from it) to the step's predicted prefill.
    void predict_prefill(const batching::CostFit& fit, double x);
    // `gaps`: the rows that decoded in the step after their first token (the tail counts them).
    void measure_decode(double step_ms, double prefill_ms, int64_t decoded_rows, int64_t gaps);
    void score_prompts();
    void prefill(StepStats& stats);
    void prefill_encoders(StepStats& stats);
    void start_encode_jobs(int64_t budget_tokens);
    EncodeJob make_job(std::vector<LiveRequest*> members) const;
    // Runs `units` units of the front job; false when it failed (its members were retried as two
    // jobs or, alone, failed with the error).
    bool advance_job(int64_t units, StepStats& stats);
    // Seq2seq: feeds an encoded request's decoder prefix (Request::decoder_prefix_ids) after its
    // start token, so that its first decoding step feeds the prefix's last token, as HF's
    // generate(decoder_input_ids=[start] + prefix) does. One pass of its own per request (outside
    // the prefill budget: a fork's prefix is as long as the output it forks). Finishes the request
    // with the error when the pass fails.
    void feed_decoder_prefix(LiveRequest& r, StepStats& stats);
    void prefill_chunks(const std::vector<std::pair<LiveRequest*, int64_t>>& pieces, StepStats& stats);
    void join_ready();
    void decode(StepStats& stats);
    void decode_range(const StepBatch& batch, size_t first, size_t last);
    void choose_and_emit(const at::Tensor& logits, const StepBatch& batch, size_t first, size_t last);
    void choose_singles(const at::Tensor& logits, const std::vector<int64_t>& rows,
                        const std::vector<LiveRequest*>& requests);
    void retire(LiveRequest& request);

    const models::Model& model_;
    std::shared_ptr<models::KvPool> pool_;
    const Tokenizer* tokenizer_;
    int64_t prefill_budget_;
    int64_t prefill_chunk_;       // decoder-only prompt chunk (0: whole prompts)
    int64_t encoder_credit_ = 0;  // encoder budget (token x units) left unspent by the last step
    batching::TimePolicy time_policy_;
    batching::StepCosts costs_;   // measured as the steps run (the budget in time)
    double prefill_ms_ = 0;       // of the step running now
    int64_t queued_ = 0;          // the engine's queue behind the admitted requests, at the step running now
    batching::QueueHead queue_head_;   // StepRows::queue_head
    bool uncapped_step_ = false;  // the step running now prefills past the cap (unlimited or bulk)
    double predicted_prefill_ms_ = 0;  // what the fits predicted for that prefill
    bool predicted_complete_ = true;   // every fit it needed was ready
    batching::StepSeen last_step_;     // the last step that decoded: its rows and time
    // Token gaps of the single-row requests that left the batch (their mean, then a moving one
    // over ~16; 0 before the first): what a waiting row is expected to decode when nothing makes
    // its length certain (StepRows::waiting_gaps).
    double mean_gaps_ = 0;
    int64_t rows_left_ = 0;
    // Requests in batch-row order: running_[0] holds state_'s rows [0, rows()), the next follows.
    std::vector<std::unique_ptr<LiveRequest>> running_;
    models::DecodeState state_;
    std::deque<std::unique_ptr<LiveRequest>> prefilling_;
    std::deque<EncodeJob> encoding_;
    // Stacked adapter factors for mixed-adapter decoding steps, kept while the set of adapters in
    // the batch stays the same.
    adapters::LoraStack lora_stack_;
};

}  // namespace lorascope::engine_detail
