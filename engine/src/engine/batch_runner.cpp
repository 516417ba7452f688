#include "engine/batch_runner.h"

#include <algorithm>
#include <cstdio>

#include "engine/failure_text.h"
#include "engine/fault_injection.h"
#include "engine/prompt_scoring.h"
#include "lorascope/error.h"
#include "runtime/allocator_policy.h"
#include "sampling/next_token_chooser.h"
#include "batching/prefill_groups.h"
#include "batching/prefill_plan.h"

namespace lorascope::engine_detail {

namespace {

// What one more encoder pass costs, in padded prompt positions: a pass reads every weight once
// more. Estimated from the weight bytes against the per-position FLOPs of t5-small and an 8-layer
// BLOOM of width 1024 (each lands at 50-100 positions); the split is not sensitive to it.
constexpr int64_t kPrefillPassTokens = 64;

// The most padded prompt positions one prefill pass computes (a request alone excepted): a pass's
// activations grow with its positions (BLOOM 1024 wide: ~60 KB each, in MLP and attention scores),
// and 32 W3 newcomers in one pass of 32 x 127 positions added ~250 MB to the peak RSS, more than the
// int8 weights. Passes of 1024 positions still run the products at full speed.
constexpr int64_t kMaxPassPositions = 1024;

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

std::string what(const std::exception& e) { return failure_text(e); }

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

// The budget in time before a kind of prefill work has been measured once: the old default token
// budget, so that the first steps behave as they did.
constexpr int64_t kColdStartTokens = 16;

int64_t chunk_tokens(int64_t chunk, int64_t budget, const batching::TimePolicy& time) {
    if (chunk > 0) return chunk;
    if (budget > 0) return std::max(budget, kMinPrefillChunk);
    if (budget < 0) return time.target_ms > 0 ? kTargetPrefillChunk : kMinPrefillChunk;
    return 0;   // no limit: whole prompts
}

double ms_since(Clock::time_point start) { return ms_between(start, Clock::now()); }

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

void BatchRunner::step(StepStats& stats) {
    const auto started = Clock::now();
    const int64_t before = stats.prefill_tokens, decoded = stats.decode_tokens;
    prefill_ms_ = 0;
    score_prompts();
    prefill(stats);
    if (stats.prefill_tokens - before >= kTrimAfterPrefillTokens) runtime::return_free_heap_pages();
    join_ready();
    decode(stats);
    measure_decode(ms_since(started), prefill_ms_, stats.decode_tokens - decoded);
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

// ------------------------------------------------------------------------------------- prefill

// The budget protects decoding rows from waiting on prefill. A token budget applies only while
// they outnumber the rows waiting to join: with none decoding nobody waits, and newcomers are best
// prefilled all at once (requests submitted together, such as a comparison's columns, join in the
// same step); with at least as many rows waiting as decoding, filling the batch is worth more than
// the few rows' next token. (W3 and W4 submit everything at once, and the engine thread often
// starts on the first few submissions: a budget then let the rest trickle in over ~10 extra steps,
// each a full read of the weights, 8% of W3's time.) The budget in time follows the same rules
// without a target (batching/time_budget.h); under one, only an idle batch is unlimited.
BatchRunner::StepBudget BatchRunner::step_budget() const {
    batching::StepRows rows;
    for (const auto& r : running_) rows.decoding += r->rows();
    for (const auto& r : prefilling_) {
        if (r->finished) continue;
        if (rows.waiting == 0) rows.next_join = r->rows();
        rows.waiting += r->rows();
    }
    const bool seq2seq = model_.is_encoder_decoder();
    const int64_t units = seq2seq ? model_.encoder_units() : 1;
    StepBudget b;
    if (!time_budget()) {
        b.unlimited = prefill_budget_ == 0 || rows.waiting >= rows.decoding;
        b.work = prefill_budget_ * units;
        return b;
    }
    const auto allowance = batching::prefill_allowance(costs_, time_policy_, rows);
    b.unlimited = allowance.unlimited;
    b.forced = allowance.forced;
    b.work = batching::work_within(seq2seq ? costs_.encoder : costs_.prefill, allowance.ms, kColdStartTokens * units);
    if (b.forced) b.work = std::max<int64_t>(b.work, 1);
    return b;
}

void BatchRunner::measure_decode(double step_ms, double prefill_ms, int64_t decoded_rows) {
    if (decoded_rows > 0) costs_.decode.add(static_cast<double>(decoded_rows), std::max(0.0, step_ms - prefill_ms));
}

int64_t BatchRunner::row_limit(int64_t prompt_tokens, int64_t max_rows) const {
    if (!time_budget() || time_policy_.target_ms <= 0) return max_rows;
    double unit_ms = 0;   // one unit of the newcomer's prefill: an encoder layer, or its first chunk
    if (model_.is_encoder_decoder()) {
        if (costs_.encoder.ready()) unit_ms = costs_.encoder.predict(static_cast<double>(prompt_tokens));
    } else if (costs_.prefill.ready()) {
        const int64_t piece = std::min<int64_t>(std::max<int64_t>(prompt_tokens - 1, 1), prefill_chunk_);
        unit_ms = costs_.prefill.predict(static_cast<double>(piece));
    }
    return batching::row_limit(costs_, time_policy_, max_rows, unit_ms);
}

// Newcomers that asked for their prompt's log-probabilities get them before their prefill.
void BatchRunner::score_prompts() {
    for (auto& r : prefilling_) {
        if (r->finished || r->prompt_scored || !r->params.prompt_logprobs) continue;
        try {
            score_prompt(*r, model_, tokenizer_);
        } catch (const std::exception& e) {
            r->finish(FinishReason::Error, "scoring the prompt failed: " + what(e));
        }
    }
}

void BatchRunner::prefill(StepStats& stats) {
    if (prefilling_.empty()) return;
    if (model_.is_encoder_decoder()) {
        prefill_encoders(stats);
        return;
    }
    std::vector<int64_t> remaining;
    for (const auto& r : prefilling_) {
        const int64_t prompt = static_cast<int64_t>(r->prompt_ids.size());
        // The last prompt token is fed by the request's first decoding step.
        remaining.push_back(r->finished ? 0 : prompt - 1 - r->prefilled);
    }
    // Chunks have one size whatever the neighbours (a request's numbers must not depend on whether
    // others were decoding); how many run per step is limited only while rows decode.
    const StepBudget budget = step_budget();
    // A forced budget of 0 still takes its first piece; an unforced one takes only what fits.
    const auto plan = batching::plan_prefill(remaining, /*chunked=*/true, prefill_chunk_,
                                             budget.unlimited ? 0 : budget.forced ? std::max<int64_t>(budget.work, 1) : budget.work,
                                             budget.unlimited || budget.forced);
    stats.prefill_tokens_deferred += plan.deferred;
    if (plan.pieces.empty()) return;
    // Chunks of similar length share a pass, as encoder passes do (see start_encode_jobs).
    std::vector<int64_t> lengths, rows;
    for (const auto& p : plan.pieces) {
        lengths.push_back(p.tokens);
        rows.push_back(1);  // beams fork after the prefill
    }
    for (const auto& pass : batching::prefill_groups(lengths, rows, kPrefillPassTokens, kMaxPassPositions)) {
        std::vector<std::pair<LiveRequest*, int64_t>> pieces;
        for (size_t i : pass) pieces.emplace_back(prefilling_[plan.pieces[i].index].get(), plan.pieces[i].tokens);
        prefill_chunks(pieces, stats);
    }
}

// An encoder pass cannot be cut along its prompt (its attention is bidirectional), but it can be
// cut along its layers: a step runs as many units (layers) of the front jobs as the budget pays
// for, at least one, so that a long prompt delays the decoding rows by a few layers' worth per
// step instead of a whole encoder. The budget is in prompt tokens through the whole encoder
// (tokens x units); a job's numbers do not depend on how its units are spread over steps.
void BatchRunner::prefill_encoders(StepStats& stats) {
    const int64_t units = model_.encoder_units();
    const StepBudget step = step_budget();
    const bool limited = !step.unlimited;
    const int64_t per_step = limited ? step.work : 0;
    int64_t budget = limited ? per_step + encoder_credit_ : INT64_MAX;
    double done = 0, padded = 0;
    bool progressed = false;
    while (budget > 0) {
        if (encoding_.empty()) start_encode_jobs(limited ? std::max<int64_t>(1, budget / units) : 0);
        if (encoding_.empty()) break;
        EncodeJob& job = encoding_.front();
        const int64_t left = units - job.work.done;
        int64_t n = std::min(left, job.cost > 0 ? budget / job.cost : left);
        if (n == 0) {
            if (progressed || !step.forced) break;
            n = 1;  // at least one unit per step
        }
        const int64_t cost = job.cost, real = job.real;
        progressed = true;
        budget -= n * cost;
        if (!advance_job(n, stats)) continue;
        done += static_cast<double>(n * real) / static_cast<double>(units);
        padded += static_cast<double>(n * (cost - real)) / static_cast<double>(units);
    }
    // Layers are whole, so a step leaves part of its budget when the next layer does not fit; that
    // part carries to the next step (at most one step's worth, and only while prompts wait), so that
    // prompts are encoded at the budget's rate. Without it a budget of 16 tokens (x 7 units of
    // t5-small: 112) ran one 68-position layer of a 68-token prompt per step, 61% of the budget, and
    // W5's arrivals queued behind each other.
    const bool waiting = !encoding_.empty() || std::any_of(prefilling_.begin(), prefilling_.end(), [](const auto& r) {
        return !r->finished && !r->encoded && !r->encoding;
    });
    // The budget in time is recomputed from the costs at every step and carries nothing.
    encoder_credit_ = limited && waiting && !time_budget() ? std::clamp<int64_t>(budget, 0, per_step) : 0;
    stats.prefill_tokens += static_cast<int64_t>(done + 0.5);
    stats.padded_tokens += static_cast<int64_t>(padded + 0.5);
    int64_t deferred = 0;
    for (const auto& job : encoding_) deferred += job.real * (units - job.work.done) / units;
    for (const auto& r : prefilling_)
        if (!r->finished && !r->encoded && !r->encoding) deferred += static_cast<int64_t>(r->prompt_ids.size());
    stats.prefill_tokens_deferred += deferred;
}

// New jobs from the requests not yet encoding, first come first served, while their prompts fit
// `budget_tokens` (at least one; 0: all), grouped by length so that little is padded.
void BatchRunner::start_encode_jobs(int64_t budget_tokens) {
    std::vector<LiveRequest*> picked;
    std::vector<int64_t> lengths, rows;
    int64_t tokens = 0;
    for (const auto& r : prefilling_) {
        if (r->finished || r->encoded || r->encoding) continue;
        const int64_t n = static_cast<int64_t>(r->prompt_ids.size());
        if (!picked.empty() && budget_tokens > 0 && tokens + n > budget_tokens) break;
        picked.push_back(r.get());
        lengths.push_back(n);
        rows.push_back(1);  // beams share their request's encoder memory
        tokens += n;
    }
    for (const auto& pass : batching::prefill_groups(lengths, rows, kPrefillPassTokens, kMaxPassPositions)) {
        std::vector<LiveRequest*> members;
        for (size_t i : pass) members.push_back(picked[i]);
        try {
            encoding_.push_back(make_job(members));
        } catch (const std::exception& e) {
            for (auto* r : members) r->finish(FinishReason::Error, "prefill failed: " + what(e));
        }
    }
}

BatchRunner::EncodeJob BatchRunner::make_job(std::vector<LiveRequest*> members) const {
    EncodeJob job;
    std::vector<std::vector<int64_t>> prompts;
    std::vector<std::shared_ptr<const adapters::LoraWeights>> weights;
    int64_t longest = 0;
    for (auto* r : members) {
        prompts.push_back(r->prompt_ids);
        weights.push_back(r->adapter.weights());
        longest = std::max<int64_t>(longest, static_cast<int64_t>(r->prompt_ids.size()));
        job.real += static_cast<int64_t>(r->prompt_ids.size());
    }
    job.cost = longest * static_cast<int64_t>(members.size());
    job.hook = std::make_unique<adapters::MultiLoraHook>(weights, model_.options().device());
    job.work = model_.begin_encoder(models::TokenBatch::from_rows(prompts, model_.pad_token_id(), model_.options().device()));
    for (auto* r : members) r->encoding = true;
    job.members = std::move(members);
    return job;
}

// A job that fails is retried from scratch as two jobs of half its members each, down to the one
// request that fails, which ends with the error; the others are encoded as if nothing happened.
bool BatchRunner::advance_job(int64_t units, StepStats& stats) {
    EncodeJob& job = encoding_.front();
    const models::LoraHook* hook = job.hook->empty() ? nullptr : job.hook.get();
    std::vector<RequestId> ids;
    for (auto* r : job.members) ids.push_back(r->id);
    const auto started = Clock::now();
    // What the units cost, for the budget in time: layer-positions computed, padding included.
    auto measure = [&] {
        const double ms = ms_since(started);
        prefill_ms_ += ms;
        costs_.encoder.add(static_cast<double>(units * job.cost), ms);
    };
    try {
        fault_point(FaultPoint::Prefill, ids);
        if (job.work.done + units < model_.encoder_units()) {
            model_.run_encoder(job.work, units, hook);
            measure();
            return true;
        }
        models::DecodeState encoded = model_.finish_encoder(job.work, hook, pool_);
        measure();
        const int64_t position_bytes = pool_->bytes_per_block() / pool_->block_size();
        for (size_t i = 0; i < job.members.size(); ++i) {
            LiveRequest& r = *job.members[i];
            r.cache = encoded.take(static_cast<int64_t>(i), 1);
            r.encoded = true;
            r.encoding = false;
            stats.cache_bytes_prefilled += static_cast<int64_t>(r.prompt_ids.size()) * position_bytes;
        }
        std::vector<LiveRequest*> members = std::move(job.members);
        encoding_.pop_front();
        for (LiveRequest* r : members)
            if (r->decoder_prefix > 0) feed_decoder_prefix(*r, stats);
        return true;
    } catch (const std::exception& e) {
        std::vector<LiveRequest*> members = std::move(job.members);
        encoding_.pop_front();
        for (auto* r : members) r->encoding = false;
        if (members.size() == 1) {
            members[0]->finish(FinishReason::Error, "prefill failed: " + what(e));
            return false;
        }
        const auto mid = members.begin() + static_cast<std::ptrdiff_t>(members.size() / 2);
        try {
            encoding_.push_front(make_job(std::vector<LiveRequest*>(mid, members.end())));
            encoding_.push_front(make_job(std::vector<LiveRequest*>(members.begin(), mid)));
        } catch (const std::exception& again) {
            for (auto* r : members)
                if (!r->encoding) r->finish(FinishReason::Error, "prefill failed: " + what(again));
        }
        return false;
    }
}

void BatchRunner::feed_decoder_prefix(LiveRequest& r, StepStats& stats) {
    try {
        fault_point(FaultPoint::Prefill, r.ids());
        const std::vector<int64_t> fed(r.input_ids.begin(), r.input_ids.end() - 1);   // start + prefix but its last
        const auto device = model_.options().device();
        const auto tokens = models::TokenBatch::from_rows({fed}, model_.pad_token_id(), device);
        const adapters::MultiLoraHook hook({r.adapter.weights()}, device);
        model_.forward(r.cache, tokens, models::LogitsAt::None, hook.empty() ? nullptr : &hook);
        stats.cache_bytes_prefilled += static_cast<int64_t>(fed.size()) * (pool_->bytes_per_block() / pool_->block_size());
    } catch (const std::exception& e) {
        r.finish(FinishReason::Error, "prefill failed (decoder prefix): " + what(e));
    }
}

// One pass over the next prompt chunk of each of `pieces`' requests (decoder-only models), rows of
// different cache lengths side by side; halved on failure like an encoder job.
void BatchRunner::prefill_chunks(const std::vector<std::pair<LiveRequest*, int64_t>>& pieces, StepStats& stats) {
    std::vector<RequestId> ids;
    std::vector<std::vector<int64_t>> chunks;
    std::vector<std::shared_ptr<const adapters::LoraWeights>> weights;
    int64_t longest = 0;
    for (const auto& [r, n] : pieces) {
        ids.push_back(r->id);
        const auto begin = r->prompt_ids.begin() + r->prefilled;
        chunks.emplace_back(begin, begin + n);
        weights.push_back(r->adapter.weights());
        longest = std::max(longest, n);
    }
    bool ok = true;
    std::string error;
    const auto started = Clock::now();
    {
        models::DecodeState batch(pool_);
        for (const auto& piece : pieces) batch.concatenate(std::move(piece.first->cache));
        try {
            fault_point(FaultPoint::Prefill, ids);
            auto tokens = models::TokenBatch::from_rows(chunks, model_.pad_token_id(), model_.options().device());
            // A chunk belongs to a pass over the whole prompt in HF's terms (dynamic RoPE scaling reads it).
            for (const auto& piece : pieces) tokens.pass_lengths.push_back(static_cast<int64_t>(piece.first->prompt_ids.size()));
            const adapters::MultiLoraHook hook(weights, model_.options().device());
            model_.forward(batch, tokens, models::LogitsAt::None, hook.empty() ? nullptr : &hook);
        } catch (const std::exception& e) {
            ok = false;
            error = what(e);
        }
        for (size_t i = 0; i < pieces.size(); ++i) pieces[i].first->cache = batch.take(static_cast<int64_t>(i), 1);
    }
    if (!ok) {
        if (pieces.size() == 1) {
            pieces[0].first->finish(FinishReason::Error, "prefill failed: " + error);
            return;
        }
        const auto mid = pieces.begin() + static_cast<std::ptrdiff_t>(pieces.size() / 2);
        prefill_chunks({pieces.begin(), mid}, stats);
        prefill_chunks({mid, pieces.end()}, stats);
        return;
    }
    const double ms = ms_since(started);
    prefill_ms_ += ms;
    costs_.prefill.add(static_cast<double>(longest * static_cast<int64_t>(pieces.size())), ms);
    const int64_t position_bytes = pool_->bytes_per_block() / pool_->block_size();
    for (const auto& [r, n] : pieces) {
        r->prefilled += n;
        stats.prefill_tokens += n;
        stats.padded_tokens += longest - n;
        stats.cache_bytes_prefilled += n * position_bytes;
    }
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
            r.finish(FinishReason::Error, "joining the batch failed: " + what(e));
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
            batch.request(first).finish(FinishReason::Error, "decoding failed: " + what(e));
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
            if (!batch.request(i).finished) batch.request(i).finish(FinishReason::Error, "choosing the next token failed: " + what(e));
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
            if (!r.finished) r.finish(FinishReason::Error, "choosing the next token failed: " + what(e));
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
            requests[0]->finish(FinishReason::Error, "choosing the next token failed: " + what(e));
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
            r.finish(FinishReason::Error, "taking the chosen token failed (detokenizing or stop strings): " + what(e));
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
