// BatchRunner's prefill half: the step's prefill budget, encoder jobs cut along their layers
// (encoder-decoder models), prompt chunks (decoder-only models) and decoder prefixes. Split from
// batch_runner.cpp, which keeps the step, joining, decoding and leaving; the class is one
// (engine/batch_runner.h).
#include "engine/batch_runner.h"
#include "engine/decode_calibration.h"

#include <algorithm>
#include <cmath>

#include "batching/prefill_groups.h"
#include "batching/prefill_plan.h"
#include "engine/failure_text.h"
#include "engine/fault_injection.h"
#include "engine/prompt_scoring.h"

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

// A prompt token's weight against a token to decode (BatchRunner::prompt_weight) before the fits
// have measured both: the first wave of a batch submitted at once is ordered before any step ran.
// Measured on W6's BLOOM (the Zen 4): 0.33; in the model of W6's steps (scripts/py/w6_bound.py's
// simulation) any weight from 0.33 to 0.66 read mean TTFT within 1% of the best of them.
constexpr double kPromptWeightPrior = 0.5;

// The budget in time before a kind of prefill work has been measured once: the old default token
// budget, so that the first steps behave as they did.
constexpr int64_t kColdStartTokens = 16;

}  // namespace

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
    for (const auto& r : running_) {
        rows.decoding += r->rows();
        rows.certain_gaps += std::max<int64_t>(0, r->certain_tokens_left() - 1);   // the step's own token aside
    }
    for (const auto& r : prefilling_) {
        if (r->finished) continue;
        if (rows.waiting == 0) rows.next_join = r->rows();
        rows.waiting += r->rows();
        rows.certain_gaps += std::max<int64_t>(0, r->certain_tokens_left() - 1);   // its first token is no gap
        rows.waiting_gaps += static_cast<double>(r->rows()) * std::max(static_cast<double>(r->certain_tokens_left() - 1), mean_gaps_);
    }
    rows.queued = queued_;
    rows.queue_head = queue_head_.waiting();
    const bool seq2seq = model_.is_encoder_decoder();
    const int64_t units = seq2seq ? model_.encoder_units() : 1;
    StepBudget b;
    if (!time_budget()) {
        b.unlimited = prefill_budget_ == 0 || rows.waiting >= rows.decoding;
        b.work = prefill_budget_ * units;
        return b;
    }
    if (time_policy_.target_ms <= 0) rows.backlog_ms = backlog_ms();   // only the cap's bulk steps read it
    const auto allowance = batching::prefill_allowance(costs_, policy(), rows);
    b.unlimited = allowance.unlimited;
    b.forced = allowance.forced;
    b.bulk = allowance.bulk;
    b.work = batching::work_within(seq2seq ? costs_.encoder : costs_.prefill, allowance.ms, kColdStartTokens * units);
    if (b.forced) b.work = std::max<int64_t>(b.work, 1);
    return b;
}

// What the waiting rows' prefill would take as the fits predict it: encoder units left (seq2seq) or
// prompt positions left (decoder-only); 0 before the fit has a sample.
double BatchRunner::backlog_ms() const {
    double x = 0;
    if (model_.is_encoder_decoder()) {
        if (!costs_.encoder.ready()) return 0;
        const int64_t units = model_.encoder_units();
        for (const auto& job : encoding_) x += static_cast<double>((units - job.work.done) * job.cost);
        for (const auto& r : prefilling_)
            if (r->awaiting_encoder()) x += static_cast<double>(units * static_cast<int64_t>(r->prompt_ids.size()));
        return x > 0 ? costs_.encoder.predict(x) : 0;
    }
    if (!costs_.prefill.ready()) return 0;
    for (const auto& r : prefilling_)
        if (!r->finished) x += static_cast<double>(std::max<int64_t>(0, static_cast<int64_t>(r->prompt_ids.size()) - 1 - r->prefilled));
    return x > 0 ? costs_.prefill.predict(x) : 0;
}

batching::TimePolicy BatchRunner::policy() const {
    batching::TimePolicy p = time_policy_;
    if (p.target_ms > 0) {
        p.margin = costs_.spread.quantile(batching::kSpreadQuantile);  // planned_ms() bounds it
        p.decode_margin = batching::decode_margin(costs_, p);   // rows_ms() bounds it
    }
    return p;
}

void BatchRunner::predict_prefill(const batching::CostFit& fit, double x) {
    if (fit.ready()) predicted_prefill_ms_ += fit.predict(x);
    else predicted_complete_ = false;
}

void BatchRunner::measure_decode(double step_ms, double prefill_ms, int64_t decoded_rows, int64_t gaps) {
    if (decoded_rows <= 0) return;
    // A step past the cap (bulk or unlimited) that prefilled: without a target the tail counts its
    // gaps; under one the bulk steps' own share does, and the tail counts steps past the target.
    const bool uncapped = uncapped_step_ && prefill_ms > 0;
    if (time_policy_.target_ms > 0) {
        costs_.tail.add(gaps, time_policy_.tail_over(step_ms));
        costs_.bulk.add(gaps, uncapped);
    } else {
        costs_.tail.add(gaps, uncapped);
    }
    last_step_ = {decoded_rows, step_ms};
    const double decode_ms = std::max(0.0, step_ms - prefill_ms);
    costs_.typical.add(decoded_rows, decode_ms);
    // The step as the fits saw it before it ran (what the policy planned with), against its time.
    if (predicted_complete_ && costs_.decode.ready())
        costs_.spread.add(costs_.decode.predict(static_cast<double>(decoded_rows)) + predicted_prefill_ms_, step_ms);
    if (prefill_ms <= 0 && time_policy_.target_ms > 0) {   // decode-only: the rows' margin (decode_margin)
        costs_.decode_tail.add(gaps, time_policy_.tail_over(step_ms));
        if (costs_.decode.ready()) costs_.decode_spread.add(costs_.decode.predict(static_cast<double>(decoded_rows)), step_ms);
    }
    costs_.decode.add(static_cast<double>(decoded_rows), decode_ms);
}

BatchRunner::RowLimit BatchRunner::row_limit(int64_t prompt_tokens, int64_t max_rows) const {
    if (!time_budget() || time_policy_.target_ms <= 0) return {max_rows, 0.0};
    double unit_ms = 0;   // one unit of the newcomer's prefill: an encoder layer, or its first chunk
    if (model_.is_encoder_decoder()) {
        if (costs_.encoder.ready()) unit_ms = costs_.encoder.predict(static_cast<double>(prompt_tokens));
    } else if (costs_.prefill.ready()) {
        const int64_t piece = std::min<int64_t>(std::max<int64_t>(prompt_tokens - 1, 1), prefill_chunk_);
        unit_ms = costs_.prefill.predict(static_cast<double>(piece));
    }
    const batching::TimePolicy p = policy();   // two spreads' quantiles: read once
    return {batching::row_limit(costs_, p, max_rows, unit_ms, last_step_), p.rows_ms()};
}

double BatchRunner::prompt_weight(int64_t max_rows) const {
    // Not for an encoder-decoder: its prompts' encoder layers run beside the decoding rows a few
    // at a time, and ordered by the weight (0.38-0.49 measured) W6's T5 lost tokens/s in 7 of 8
    // paired rounds on the Zen 4 (docs/benchmarks.md, issue 33: median 1.11x -> 1.03x static's, mean
    // TTFT 0.57x -> 0.59x).
    if (model_.is_encoder_decoder()) return 0;
    const batching::CostFit& decode = costs_.decode_or_prior();
    if (max_rows <= 0 || !decode.ready() || !costs_.prefill.ready()) return kPromptWeightPrior;
    const double row_ms = decode.predict(static_cast<double>(max_rows)) / static_cast<double>(max_rows);
    const double token_ms = costs_.prefill.slope();
    if (!(row_ms > 0) || !std::isfinite(token_ms)) return kPromptWeightPrior;
    return token_ms / row_ms;
}

void BatchRunner::calibrate(int64_t max_rows) {
    if (!time_budget() || time_policy_.target_ms <= 0 || costs_.decode_prior.ready()) return;
    calibrate_decode(model_, max_rows, costs_.decode_prior);
}

// Newcomers that asked for their prompt's log-probabilities get them before their prefill.
void BatchRunner::score_prompts() {
    for (auto& r : prefilling_) {
        if (r->finished || r->prompt_scored || !r->params.prompt_logprobs) continue;
        try {
            score_prompt(*r, model_, tokenizer_);
        } catch (const std::exception& e) {
            r->finish(FinishReason::Error, "scoring the prompt failed: " + failure_text(e));
        }
    }
}

void BatchRunner::prefill(StepStats& stats) {
    if (prefilling_.empty()) return;
    if (model_.is_encoder_decoder()) {
        prefill_encoders(stats);
        return;
    }
    // Chunks have one size whatever the neighbours (a request's numbers must not depend on whether
    // others were decoding); how many run per step is limited only while rows decode.
    const StepBudget budget = step_budget();
    uncapped_step_ = budget.unlimited || budget.bulk;
    stats.bulk_prefill = budget.bulk;
    // Under a target, an idle batch (nothing decodes, so no row waits on the prefill) runs its
    // newcomers' whole prompts in this step, chunk after chunk, so that they all decode from the
    // next one. One chunk each (what unlimited means otherwise) left the longer prompts to finish
    // in the time the first few decoding rows left under the target: on W6's BLOOM, 9 of 32 rows
    // decoded for 40 steps while 1022 prompt tokens waited (TTFT p50 2.6x static's). A bulk step
    // (the tail pays for it) does the same within its budget.
    const bool whole = time_policy_.target_ms > 0 && ((budget.unlimited && running_.empty()) || budget.bulk);
    int64_t left = budget.work;   // a bulk step's budget, spent over its rounds of chunks
    int64_t deferred = 0;
    for (;;) {
        std::vector<int64_t> remaining;
        for (const auto& r : prefilling_) {
            const int64_t prompt = static_cast<int64_t>(r->prompt_ids.size());
            // The last prompt token is fed by the request's first decoding step.
            remaining.push_back(r->finished ? 0 : prompt - 1 - r->prefilled);
        }
        // A forced budget of 0 still takes its first piece; an unforced one takes only what fits.
        const int64_t work = budget.bulk ? left : budget.work;
        const auto plan = batching::plan_prefill(remaining, /*chunked=*/true, prefill_chunk_,
                                                 budget.unlimited ? 0 : budget.forced ? std::max<int64_t>(work, 1) : work,
                                                 budget.unlimited || budget.forced);
        left -= plan.tokens;
        deferred = plan.deferred;
        if (plan.pieces.empty()) break;
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
        // Every pass advances its pieces' requests or finishes them (an error), so the loop ends.
        if (!whole || plan.deferred == 0 || (budget.bulk && left <= 0)) break;
    }
    stats.prefill_tokens_deferred += deferred;
}

// An encoder pass cannot be cut along its prompt (its attention is bidirectional), but it can be
// cut along its layers: a step runs as many units (layers) of the front jobs as the budget pays
// for, at least one, so that a long prompt delays the decoding rows by a few layers' worth per
// step instead of a whole encoder. The budget is in prompt tokens through the whole encoder
// (tokens x units); a job's numbers do not depend on how its units are spread over steps.
void BatchRunner::prefill_encoders(StepStats& stats) {
    const int64_t units = model_.encoder_units();
    const StepBudget step = step_budget();
    uncapped_step_ = step.unlimited || step.bulk;
    stats.bulk_prefill = step.bulk;
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
        return r->awaiting_encoder();
    });
    // The budget in time is recomputed from the costs at every step and carries nothing.
    encoder_credit_ = limited && waiting && !time_budget() ? std::clamp<int64_t>(budget, 0, per_step) : 0;
    stats.prefill_tokens += static_cast<int64_t>(done + 0.5);
    stats.padded_tokens += static_cast<int64_t>(padded + 0.5);
    int64_t deferred = 0;
    for (const auto& job : encoding_) deferred += job.real * (units - job.work.done) / units;
    for (const auto& r : prefilling_)
        if (r->awaiting_encoder()) deferred += static_cast<int64_t>(r->prompt_ids.size());
    stats.prefill_tokens_deferred += deferred;
}

// New jobs from the requests not yet encoding, first come first served, while their prompts fit
// `budget_tokens` (at least one; 0: all), grouped by length so that little is padded.
void BatchRunner::start_encode_jobs(int64_t budget_tokens) {
    std::vector<LiveRequest*> picked;
    std::vector<int64_t> lengths, rows;
    int64_t tokens = 0;
    for (const auto& r : prefilling_) {
        if (!r->awaiting_encoder()) continue;
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
            for (auto* r : members) r->finish(FinishReason::Error, "prefill failed: " + failure_text(e));
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
        predict_prefill(costs_.encoder, static_cast<double>(units * job.cost));
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
            members[0]->finish(FinishReason::Error, "prefill failed: " + failure_text(e));
            return false;
        }
        const auto mid = members.begin() + static_cast<std::ptrdiff_t>(members.size() / 2);
        try {
            encoding_.push_front(make_job(std::vector<LiveRequest*>(mid, members.end())));
            encoding_.push_front(make_job(std::vector<LiveRequest*>(members.begin(), mid)));
        } catch (const std::exception& again) {
            for (auto* r : members)
                if (!r->encoding) r->finish(FinishReason::Error, "prefill failed: " + failure_text(again));
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
        r.finish(FinishReason::Error, "prefill failed (decoder prefix): " + failure_text(e));
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
            error = failure_text(e);
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
    const double positions = static_cast<double>(longest * static_cast<int64_t>(pieces.size()));
    predict_prefill(costs_.prefill, positions);
    costs_.prefill.add(positions, ms);
    const int64_t position_bytes = pool_->bytes_per_block() / pool_->block_size();
    for (const auto& [r, n] : pieces) {
        r->prefilled += n;
        stats.prefill_tokens += n;
        stats.padded_tokens += longest - n;
        stats.cache_bytes_prefilled += n * position_bytes;
    }
}

}  // namespace lorascope::engine_detail
