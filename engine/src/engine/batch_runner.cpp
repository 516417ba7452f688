#include "engine/batch_runner.h"

#include <algorithm>
#include <cstdio>

#include "engine/failure_text.h"
#include "engine/fault_injection.h"
#include "lorascope/error.h"
#include "runtime/allocator_policy.h"
#include "sampling/next_token_chooser.h"

namespace lorascope::engine_detail {

namespace {

// A prefill of this many prompt tokens in one step frees tens of MB of activations (BLOOM 1024
// wide: ~60 KB per position), which glibc keeps in its heaps (runtime/allocator_policy.cpp sets a
// high trim threshold): later small long-lived allocations pin them, and W3's int8 peak RSS was
// 894 MB against 813 MB with the freed pages handed back after such steps (float32: 1962 against
// 1832). Decoding steps' temporaries are reused from step to step and are left alone.
constexpr int64_t kTrimAfterPrefillTokens = 256;

// Decoder-only prompt chunks, unless set, are never shorter than this: every chunk pass reads the model's
// weights once more, and a BLOOM prompt token costs far less than a decoding row (no LM head: for
// W3's 250880-word head a row costs ~3.5 prompt tokens), so a 128-token chunk is about one
// decoding step of 32 rows. With 64-token chunks W3's prompts (8-128 tokens) took two passes and
// W3 lost 8% of its tokens/s against whole-prompt prefill.
constexpr int64_t kMinPrefillChunk = 128;

// Whether processing changes these rows' scores by more than -inf bans (which a retry repeats alike).
bool rescales(const std::vector<sampling::LogitsRow>& rows) {
    for (const auto& r : rows)
        if (r.params->do_sample || r.params->repetition_penalty != 1.0) return true;
    return false;
}

// Under a time-per-token target, decoder-only prompt chunks are this long unless set: a chunk is
// the smallest piece of prefill a step can take, and a step under the target holds its decoding
// rows plus one chunk at least. W3's BLOOM (8 layers of width 1024, head of 250880 words) computes
// a 128-token chunk in about the time of a 32-row decoding step, so under a target near that
// step's time no chunk of 128 would ever fit beside the rows.
constexpr int64_t kTargetPrefillChunk = 32;

int64_t chunk_tokens(int64_t chunk, int64_t budget, const batching::TimePolicy& time) {
    if (chunk > 0) return chunk;
    if (budget > 0) return std::max(budget, kMinPrefillChunk);
    if (budget < 0) return time.target_ms > 0 ? kTargetPrefillChunk : kMinPrefillChunk;
    return 0;   // no limit: whole prompts
}

}  // namespace

BatchRunner::BatchRunner(const models::Model& model, std::shared_ptr<models::KvPool> pool, const Tokenizer* tokenizer,
                         int64_t prefill_budget_tokens, int64_t prefill_chunk_tokens,
                         const batching::TimePolicy& time_policy)
    : model_(model),
      pool_(std::move(pool)),
      tokenizer_(tokenizer),
      prefill_budget_(prefill_budget_tokens),
      prefill_chunk_(chunk_tokens(prefill_chunk_tokens, prefill_budget_tokens, time_policy)),
      time_policy_(time_policy),
      state_(pool_) {}

BatchRunner::~BatchRunner() = default;

void BatchRunner::add(std::unique_ptr<LiveRequest> request) {
    if (!model_.is_encoder_decoder()) {
        request->cache = models::DecodeState(pool_);
        request->cache.add_row();
    }
    prefilling_.push_back(std::move(request));
}

batching::BatchShape BatchRunner::shape() const {
    batching::BatchShape shape;
    for (const auto& r : running_) shape = shape.with(r->demand());
    for (const auto& r : prefilling_) shape = shape.with(r->demand());
    return shape;
}

// Never throws: it runs on every way out of the batch, finish_all's included. A release the pool
// refuses (a bug in the accounting, asserted in debug builds) goes to stderr, not up the step.
void BatchRunner::retire(LiveRequest& request) {
    try {
        pool_->unreserve(request.kv_blocks);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lorascope engine: request %llu: %s\n", static_cast<unsigned long long>(request.id), e.what());
    }
    request.kv_blocks = 0;
    request.cache = models::DecodeState();
}

void BatchRunner::step(StepStats& stats, int64_t queued) {
    queued_ = queued;
    queue_head_.boundary(queued);
    const auto started = Clock::now();
    const int64_t before = stats.prefill_tokens, decoded = stats.decode_tokens;
    prefill_ms_ = 0;
    uncapped_step_ = false;
    predicted_prefill_ms_ = 0;
    predicted_complete_ = true;
    if (time_budget() && time_policy_.target_ms > 0) stats.prefill_margin = std::clamp(policy().margin, 1.0, batching::kMaxMargin);
    score_prompts();
    prefill(stats);
    if (stats.prefill_tokens - before >= kTrimAfterPrefillTokens) runtime::return_free_heap_pages();
    int64_t gaps = 0;   // rows that decoded before: their token this step follows another
    for (const auto& r : running_)
        if (!r->finished) gaps += r->rows();
    join_ready();
    decode(stats);
    measure_decode(ms_since(started), prefill_ms_, stats.decode_tokens - decoded, gaps);
    if (gaps > 0 && uncapped_step_ && prefill_ms_ > 0) queue_head_.bulk_served();
    stats.prefill_ms += prefill_ms_;
    // Requests still being prefilled show as prefill rows of their own.
    for (const auto& r : prefilling_) {
        if (r->finished || (r->prefilled == 0 && !r->encoded)) continue;
        stats.rows += 1;
        stats.row_requests.push_back(r->id);
        stats.row_prefill.push_back(true);
        stats.row_kv_blocks.push_back(r->cache.blocks_in_use());
    }
    drop_finished();
}

// Newcomers whose prompt is in the cache join the running batch: their rows' block tables are
// appended (beams fork from the one prefilled row, sharing its blocks). Nothing is copied.
void BatchRunner::join_ready() {
    const bool seq2seq = model_.is_encoder_decoder();
    for (auto it = prefilling_.begin(); it != prefilling_.end();) {
        LiveRequest& r = **it;
        const bool ready = seq2seq ? r.encoded : r.prefilled + 1 == static_cast<int64_t>(r.prompt_ids.size());
        if (r.finished || !ready) {
            ++it;
            continue;
        }
        try {
            fault_point(FaultPoint::CacheJoin, r.ids());
            if (r.rows() > 1) r.cache.filter(std::vector<int64_t>(static_cast<size_t>(r.rows()), 0));
            state_.concatenate(std::move(r.cache));
        } catch (const std::exception& e) {
            r.finish(FinishReason::Error, "joining the batch failed: " + failure_text(e));
            ++it;
            continue;
        }
        r.joined_this_step = true;
        running_.push_back(std::move(*it));
        it = prefilling_.erase(it);
    }
}

// -------------------------------------------------------------------------------------- decode

void BatchRunner::decode(StepStats& stats) {
    if (running_.empty()) return;
    const StepBatch batch(running_, state_);
    batch.count(stats);
    decode_range(batch, 0, batch.request_count());
    for (auto& r : running_) r->joined_this_step = false;
}

// The decoding pass over requests [first, last) of the batch. A failure (an exception from the
// model, std::bad_alloc, a device out of memory) is retried on each half, down to the one request
// that fails, which ends with the error; the cache is unchanged by a failed pass (lengths advance
// only after every layer ran, so a retry rewrites the same slots).
void BatchRunner::decode_range(const StepBatch& batch, size_t first, size_t last) {
    const int64_t row0 = batch.first_row(first), n = batch.first_row(last) - row0;
    const auto device = model_.options().device();
    at::Tensor logits;
    try {
        fault_point(FaultPoint::DecodeStep, batch.ids(first, last));
        const bool whole = n == state_.rows();
        const adapters::MultiLoraHook hook = batch.lora_hook(row0, n, device, whole ? &lora_stack_ : nullptr);
        const at::Tensor tokens = batch.tokens(row0, n, device);
        if (whole) {
            logits = model_.decode_step(state_, tokens, hook.empty() ? nullptr : &hook);
        } else {
            models::DecodeState part = state_.take(row0, n);
            try {
                logits = model_.decode_step(part, tokens, hook.empty() ? nullptr : &hook);
            } catch (...) {
                state_.put(row0, std::move(part));
                throw;
            }
            state_.put(row0, std::move(part));
        }
    } catch (const std::exception& e) {
        if (last - first == 1) {
            batch.request(first).finish(FinishReason::Error, "decoding failed: " + failure_text(e));
            return;
        }
        const size_t mid = first + (last - first) / 2;
        decode_range(batch, first, mid);
        decode_range(batch, mid, last);
        return;
    }
    choose_and_emit(logits, batch, first, last);
}

// Every request's next token. A failure belongs to the request it comes from (issue 26): a beam
// or multi-sample request fails alone; a failure processing the single-row requests' scores
// together is retried request by request; a row whose distribution is not one (choose_next_tokens)
// and a failure taking a token (detokenizing, stop strings) end that request only.
void BatchRunner::choose_and_emit(const at::Tensor& raw, const StepBatch& batch, size_t first, size_t last) {
    const int64_t row0 = batch.first_row(first);
    at::Tensor logits;
    try {
        logits = raw.to(at::kFloat).contiguous();
    } catch (const std::exception& e) {
        for (size_t i = first; i < last; ++i)
            if (!batch.request(i).finished) batch.request(i).finish(FinishReason::Error, "choosing the next token failed: " + failure_text(e));
        return;
    }
    // Single-sequence rows are processed together; each beam request works on its own rows.
    std::vector<int64_t> single_rows;
    std::vector<LiveRequest*> singles;
    for (size_t i = first; i < last; ++i) {
        LiveRequest& r = batch.request(i);
        const int64_t offset = batch.first_row(i) - row0;
        if (r.finished) continue;  // a leave that failed: it rides along until it is retried
        if (!r.multi_row()) {
            single_rows.push_back(offset);
            singles.push_back(&r);
            continue;
        }
        try {
            fault_point(FaultPoint::Choose, r.ids());
            const at::Tensor rows = logits.narrow(0, offset, r.rows());
            const auto source = r.beams ? r.beam_step(rows, tokenizer_) : r.sample_rows_step(rows, tokenizer_);
            bool moved = false;
            for (size_t j = 0; j < source.size(); ++j) moved = moved || source[j] != static_cast<int64_t>(j);
            // The beams' block tables follow their sources: references only, inside this request.
            if (moved && !r.finished) state_.reorder(row0 + offset, source);
        } catch (const std::exception& e) {
            if (!r.finished) r.finish(FinishReason::Error, "choosing the next token failed: " + failure_text(e));
        }
    }
    if (!singles.empty()) choose_singles(logits, single_rows, singles);
}

// Processors touch no generator and choose_next_tokens draws nothing for a row it refuses, so the
// retry of each request alone draws what the batch would have drawn for it.
void BatchRunner::choose_singles(const at::Tensor& logits, const std::vector<int64_t>& rows,
                                 const std::vector<LiveRequest*>& requests) {
    std::vector<sampling::TokenChoice> choices;
    std::vector<std::vector<sampling::Alternative>> alternatives;
    try {
        std::vector<RequestId> ids;
        std::vector<sampling::LogitsRow> logits_rows;
        std::vector<at::Generator> generators;
        for (LiveRequest* r : requests) {
            ids.push_back(r->id);
            r->append_logits_rows(logits_rows);
            generators.push_back(r->generator);
        }
        fault_point(FaultPoint::Choose, ids);
        // Processing is in place. A retry must start from the model's scores, so several
        // requests whose processing rescales them (sampling's warpers, a repetition penalty) work
        // on a copy; what greedy rows get besides (eos bans, forced tokens, n-gram bans) only sets
        // -inf, the same again on a retry, and a greedy batch pays nothing. Measured on this
        // (loaded, 2-core) machine: a copy of [32, 32128] float scores took 4.8 ms, the softmax
        // every sampling step computes on them 9.7 ms.
        const bool whole = static_cast<int64_t>(rows.size()) == logits.size(0);
        at::Tensor scores = !whole ? logits.index_select(0, at::tensor(rows, at::kLong).to(logits.device()))
                            : requests.size() > 1 && rescales(logits_rows) ? logits.clone()
                                                                           : logits;
        sampling::process_logits(scores, logits_rows);
        choices = sampling::choose_next_tokens(scores, logits_rows, generators);
        alternatives = sampling::top_alternatives(scores, logits_rows);
    } catch (const std::exception& e) {
        if (requests.size() == 1) {
            requests[0]->finish(FinishReason::Error, "choosing the next token failed: " + failure_text(e));
            return;
        }
        for (size_t i = 0; i < requests.size(); ++i) choose_singles(logits, {rows[i]}, {requests[i]});
        return;
    }
    for (size_t i = 0; i < requests.size(); ++i) {
        LiveRequest& r = *requests[i];
        if (!choices[i].error.empty()) {
            r.finish(FinishReason::Error, "choosing the next token failed: " + choices[i].error);
            continue;
        }
        try {
            fault_point(FaultPoint::Accept, r.ids());
            const auto shown = with_text(alternatives[i], tokenizer_);
            r.accept(choices[i], tokenizer_, &shown);
        } catch (const std::exception& e) {
            r.finish(FinishReason::Error, "taking the chosen token failed (detokenizing or stop strings): " + failure_text(e));
        }
    }
}

// ------------------------------------------------------------------------------ leave, cancel

void BatchRunner::drop_finished() {
    int64_t offset = state_.rows();
    for (size_t i = running_.size(); i-- > 0;) {
        LiveRequest& r = *running_[i];
        offset -= r.rows();
        if (!r.finished) continue;
        try {
            fault_point(FaultPoint::CacheLeave, r.ids());
        } catch (const std::exception&) {
            continue;  // nothing changed: retried at the next step boundary
        }
        state_.erase(offset, r.rows());
        queue_head_.row_left(queued_);
        if (!r.multi_row()) {
            const double gaps = static_cast<double>(std::max<size_t>(r.generated.size(), 1) - 1);
            mean_gaps_ += (gaps - mean_gaps_) / static_cast<double>(std::min<int64_t>(++rows_left_, 16));
        }
        retire(r);
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    for (auto it = prefilling_.begin(); it != prefilling_.end();) {
        if ((*it)->finished && !(*it)->encoding) {  // an encoder job still points at it
            retire(**it);
            it = prefilling_.erase(it);
        } else {
            ++it;
        }
    }
}

void BatchRunner::cancel(const std::function<bool(RequestId)>& wanted) {
    bool any = false;
    for (auto& r : running_)
        if (!r->finished && wanted(r->id)) r->finish(FinishReason::Cancelled), any = true;
    for (auto& r : prefilling_)
        if (!r->finished && wanted(r->id)) r->finish(FinishReason::Cancelled), any = true;
    if (any) drop_finished();
}

void BatchRunner::finish_all(FinishReason reason, const std::string& error) {
    for (auto& r : running_)
        if (!r->finished) r->finish(reason, error);
    for (auto& r : prefilling_)
        if (!r->finished) r->finish(reason, error);
    encoding_.clear();
    for (auto& r : running_) retire(*r);
    for (auto& r : prefilling_) retire(*r);
    running_.clear();
    prefilling_.clear();
    state_ = models::DecodeState(pool_);
}

void BatchRunner::cache_stats(StepStats& stats) {
    stats.kv_block_size = pool_->block_size();
    stats.kv_blocks_total = pool_->capacity();
    stats.kv_blocks_used = pool_->used();
    stats.kv_bytes_allocated = pool_->used() * pool_->bytes_per_block();
    int64_t in_use = state_.bytes_in_use();
    for (const auto& r : prefilling_) in_use += r->cache.bytes_in_use();
    stats.kv_bytes_in_use = in_use;
    stats.cache_bytes_moved += pool_->take_bytes_moved();
}

}  // namespace lorascope::engine_detail
