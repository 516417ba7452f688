#include "engine/live_request.h"

#include "engine/emitter.h"

#include <algorithm>
#include <limits>
#include <random>

#include "lorascope/error.h"
#include "models/model.h"
#include "tokenizer/truncation.h"
#include "tokenizer/unicode.h"
#include "util/checked_math.h"

namespace lorascope::engine_detail {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

double ms_since(Clock::time_point start) { return ms_between(start, Clock::now()); }

// What transformers' StopStringCriteria matches stop strings against, and the text of alternatives.
std::string token_piece(const Tokenizer* tokenizer, int64_t id) {
    if (!tokenizer) return {};
    const auto bytes = tokenizer->token_bytes(id, /*first=*/false);
    return bytes ? tokenizer::utf8_lossy(*bytes) : std::string();
}

std::vector<TokenAlternative> with_text(const std::vector<sampling::Alternative>& alternatives,
                                        const Tokenizer* tokenizer) {
    std::vector<TokenAlternative> out;
    out.reserve(alternatives.size());
    for (const auto& a : alternatives) out.push_back({a.token_id, a.logprob, token_piece(tokenizer, a.token_id)});
    return out;
}

namespace {

// `vocab`: the encoder's ids for a prompt (Marian's source vocabulary), the head's for a target.
void check_vocabulary(const std::vector<int64_t>& ids, int64_t vocab, const std::string& source, const char* what) {
    for (int64_t t : ids)
        if (t < 0 || t >= vocab)
            throw Error(ErrorKind::InvalidArgument, source,
                        std::string(what) + " id " + std::to_string(t) + " is outside the vocabulary [0, " +
                            std::to_string(vocab) + ")");
}

// An unknown language code is the request's error (named by it), not the tokenizer files'.
[[noreturn]] void as_request_error(const Error& e, const std::string& source) {
    if (e.kind() != ErrorKind::InvalidArgument) throw;   // called inside the handler
    throw Error(ErrorKind::InvalidArgument, source, e.message());
}

// The target whose tokens an encoder-decoder request's prompt_logprobs score.
std::vector<int64_t> target_of(const Request& request, const ResolvedGenerationParams& params,
                               const models::Model& model, const Tokenizer* tokenizer, const std::string& source) {
    const bool given = request.target || !request.target_ids.empty();
    if (given && !params.prompt_logprobs)
        throw Error(ErrorKind::InvalidArgument, source, "a target is scored only with params.prompt_logprobs true");
    if (!params.prompt_logprobs || !model.is_encoder_decoder()) {
        if (given)
            throw Error(ErrorKind::InvalidArgument, source,
                        "a target is for encoder-decoder models; a decoder-only model's prompt_logprobs score its prompt");
        return {};
    }
    if (!given)
        throw Error(ErrorKind::InvalidArgument, source,
                    "prompt_logprobs on an encoder-decoder model scores a target: give the decoder text as target "
                    "(or target_ids)");
    if (request.target && !tokenizer)
        throw Error(ErrorKind::InvalidArgument, source,
                    "a text target needs tokenizer files in " + model.directory() + "; send target_ids instead");
    std::vector<int64_t> ids = request.target_ids;
    if (request.target) {
        // Hugging Face's tokenizer(text_target=...): Marian's target SentencePiece model, mBART-50's
        // and NLLB's tgt_lang code where their target layout puts it (tokenizer_config.json's
        // tgt_lang when the request names none), the model's special tokens.
        EncodeOptions encoding;
        encoding.target = true;
        encoding.tgt_lang = request.params.tgt_lang.value_or("");
        try {
            ids = tokenizer->encode(*request.target, encoding);
        } catch (const Error& e) {
            as_request_error(e, source);
        }
    }
    if (ids.empty()) throw Error(ErrorKind::InvalidArgument, source, "the target is empty (no ids)");
    check_vocabulary(ids, model.vocab_size(), source, "target");
    return ids;
}

// How a text prompt is encoded: with the request's languages (the tokenizer checks both).
EncodeOptions prompt_encoding(const GenerationParams& params) {
    EncodeOptions options;
    options.src_lang = params.src_lang.value_or("");
    options.tgt_lang = params.tgt_lang.value_or("");
    return options;
}

// The request's prompt ids: its text prompt tokenized, its conversation rendered and tokenized
// (without added special tokens, as apply_chat_template(tokenize=True)), or its own ids.
std::vector<int64_t> prompt_ids_of(const Request& request, const models::Model& model, const PromptSources& sources,
                                   const std::string& source) {
    const Tokenizer* tokenizer = sources.tokenizer;
    if (request.params.src_lang && !request.prompt)
        throw Error(ErrorKind::InvalidArgument, source,
                    "src_lang places its code where the tokenizer encodes a text prompt; give a prompt, or put the "
                    "code in the input_ids");
    if (request.conversation) {
        if (request.prompt || !request.input_ids.empty())
            throw Error(ErrorKind::InvalidArgument, source, "give one of a prompt, input_ids or a conversation");
        if (!tokenizer)
            throw Error(ErrorKind::InvalidArgument, source,
                        "a conversation needs tokenizer files in " + model.directory() + "; send input_ids instead");
        if (!sources.chat_templates) throw Error(ErrorKind::InvalidArgument, source, sources.no_chat_templates);
        ChatRenderOptions options;
        options.add_generation_prompt = true;
        return tokenizer->encode(sources.chat_templates->render(*request.conversation, options), /*add_special_tokens=*/false);
    }
    if (request.prompt) {
        if (!tokenizer)
            throw Error(ErrorKind::InvalidArgument, source,
                        "a text prompt needs tokenizer files in " + model.directory() + "; send input_ids instead");
        try {
            return tokenizer->encode(*request.prompt, prompt_encoding(request.params));
        } catch (const Error& e) {
            as_request_error(e, source);
        }
    }
    return request.input_ids;
}

// The forced first token for params.tgt_lang: the code's id, checked by the tokenizer as it checks a
// target language (its error names the code and some valid ones); none when tgt_lang is absent.
std::optional<int64_t> target_language_id(const GenerationParams& params, const models::Model& model,
                                          const Tokenizer* tokenizer, const std::string& source) {
    if (!params.tgt_lang) return std::nullopt;
    if (!tokenizer)
        throw Error(ErrorKind::InvalidArgument, source,
                    "tgt_lang needs tokenizer files in " + model.directory() + " to find its code's id");
    try {
        EncodeOptions check;
        check.add_special_tokens = false;
        check.tgt_lang = *params.tgt_lang;
        (void)tokenizer->encode("", check);
    } catch (const Error& e) {
        as_request_error(e, source);
    }
    const auto id = tokenizer->language_token_id(*params.tgt_lang);
    // Checked here, not when the step forces it: a bad id there would fail the whole batch.
    if (!id || *id >= model.vocab_size())
        throw Error(ErrorKind::InvalidArgument, source,
                    "tgt_lang '" + *params.tgt_lang + "' is token id " + std::to_string(id.value_or(-1)) +
                        ", outside the model's vocabulary of " + std::to_string(model.vocab_size()));
    return id;
}

}  // namespace

void LiveRequest::prepare(const Request& request, const models::Model& model, const PromptSources& sources,
                          const RequestBudget& budget) {
    const std::string source = "request " + (client_id.empty() ? std::to_string(id) : client_id);
    params = resolve(request.params, model.generation_config(), source);
    adapter_name = request.adapter;  // checked against the engine's adapter registry by the engine

    prompt_ids = prompt_ids_of(request, model, sources, source);
    const Tokenizer* tokenizer = sources.tokenizer;
    if (auto forced = target_language_id(request.params, model, tokenizer, source)) params.forced_bos_token_id = forced;
    if (prompt_ids.empty())
        throw Error(ErrorKind::InvalidArgument, source, "the prompt is empty (no input ids)");
    if (params.truncate && static_cast<int64_t>(prompt_ids.size()) > *params.truncate) {
        // As LoRAX: a text prompt as Hugging Face's tokenizer truncates it on the left (its special
        // tokens kept), ready ids by keeping the last ones.
        prompt_ids = request.prompt ? tokenizer::truncate_left(*tokenizer, *request.prompt, *params.truncate, source,
                                                               prompt_encoding(request.params))
                                    : std::vector<int64_t>(prompt_ids.end() - *params.truncate, prompt_ids.end());
    }
    check_vocabulary(prompt_ids, model.source_vocab_size(), source, "input");
    target_ids = target_of(request, params, model, tokenizer, source);

    if (model.is_encoder_decoder()) {
        input_ids = {model.decoder_start_token_id()};
        check_vocabulary(request.decoder_prefix_ids, model.vocab_size(), source, "decoder prefix");
        input_ids.insert(input_ids.end(), request.decoder_prefix_ids.begin(), request.decoder_prefix_ids.end());
    } else {
        if (!request.decoder_prefix_ids.empty())
            throw Error(ErrorKind::InvalidArgument, source,
                        "decoder_prefix_ids are for encoder-decoder models; a decoder-only model takes those tokens "
                        "at the end of its prompt");
        input_ids = prompt_ids;
    }
    input_ids_length = static_cast<int64_t>(input_ids.size());
    max_new_tokens = params.max_new_tokens_for(input_ids_length);
    // Before anything is sized by them: rows and lengths within the engine's limits, so that no
    // count below (beams, KV blocks, admission's cost) can overflow.
    const int64_t rows = params.num_beams > 1 ? params.num_beams : std::max(params.num_return_sequences, params.best_of);
    // A seq2seq decoder prefix occupies decoder positions as new tokens do.
    decoder_prefix = model.is_encoder_decoder() ? input_ids_length - 1 : 0;
    check_request_budget(rows, static_cast<int64_t>(prompt_ids.size()),
                         util::checked_add(max_new_tokens, decoder_prefix).value_or(INT64_MAX), budget, source);

    if (params.num_beams > 1) {
        beams = std::make_unique<sampling::BeamSearch>(params, input_ids_length, input_ids_length + max_new_tokens);
        beam_ids.assign(static_cast<size_t>(params.num_beams), input_ids);
    } else if (params.num_return_sequences > 1 || params.best_of > 1) {
        // best_of's candidates are drawn as num_return_sequences' rows are (resolve allows one of them).
        const size_t n = static_cast<size_t>(std::max(params.num_return_sequences, params.best_of));
        beam_ids.assign(n, input_ids);
        sample_row_done.assign(n, false);
        sample_row_logprobs.assign(n, {});
        if (params.top_alternatives > 0) sample_row_alternatives.assign(n, {});
    }
    if (params.do_sample) {
        if (!params.seed) params.seed = std::random_device{}();
        generator = sampling::make_request_generator(*params.seed);
    }
    if (tokenizer) detokenizer = std::make_unique<StreamingDetokenizer>(*tokenizer, true);
    stopping = std::make_unique<sampling::StoppingCriteria>(params, max_new_tokens);
    // HF's criterion sees generate()'s whole input_ids: a stop string may begin in the context.
    if (!params.stop.empty())
        for (int64_t t : input_ids) stopping->add_context(token_piece(tokenizer, t));
}

// prepare() bounded rows x (prompt + new tokens) by max_batch_tokens, so none of this can overflow;
// it is computed in checked arithmetic all the same, and an overflow asks admission for an
// impossible number of blocks (the request is rejected) rather than a wrapped one.
int64_t LiveRequest::kv_blocks_needed(bool encoder_decoder) const {
    const int64_t bs = models::KvPool::kBlockSize;
    const int64_t prompt = static_cast<int64_t>(prompt_ids.size());
    auto blocks = [&](std::optional<int64_t> positions) -> std::optional<int64_t> {
        if (!positions || *positions < 0) return std::nullopt;
        return util::ceil_div(*positions, bs);
    };
    std::optional<int64_t> total;
    if (encoder_decoder) {
        const auto decoder = blocks(util::checked_add(max_new_tokens, input_ids_length));   // start + prefix
        const auto per_rows = decoder ? util::checked_mul(rows(), *decoder) : std::nullopt;
        const auto encoder = blocks(prompt);
        total = per_rows && encoder ? util::checked_add(*per_rows, *encoder) : std::nullopt;
    } else {
        const auto self = blocks(util::checked_add(prompt, max_new_tokens));
        total = self ? util::checked_mul(rows(), *self) : std::nullopt;
    }
    return total ? *total : INT64_MAX;
}

int64_t LiveRequest::certain_tokens_left() const {
    if (finished || multi_row()) return 0;
    const int64_t bound = params.ignore_eos && params.stop.empty() ? max_new_tokens : params.min_new_tokens.value_or(0);
    return std::max<int64_t>(0, bound - static_cast<int64_t>(generated.size()));
}

batching::Demand LiveRequest::demand() const {
    batching::Demand d;
    d.id = id;
    d.rows = rows();
    d.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
    d.max_new_tokens = max_new_tokens + decoder_prefix;   // its positions are the decoder's too
    d.skipped = skipped;
    d.intake = intake;
    return d;
}

void LiveRequest::append_last_tokens(std::vector<int64_t>& out) const {
    if (multi_row()) {
        for (const auto& ids : beam_ids) out.push_back(ids.back());
    } else {
        out.push_back(input_ids.back());
    }
}

void LiveRequest::append_logits_rows(std::vector<sampling::LogitsRow>& out) const {
    auto row = [&](const std::vector<int64_t>& ids) {
        sampling::LogitsRow r;
        r.params = &params;
        r.input_ids = &ids;
        r.input_ids_length = input_ids_length;
        return r;
    };
    if (multi_row()) {
        for (const auto& ids : beam_ids) out.push_back(row(ids));
    } else {
        out.push_back(row(input_ids));
    }
}

std::vector<int64_t> LiveRequest::beam_step(const at::Tensor& logits, const Tokenizer* tokenizer) {
    // As transformers' _beam_search: log_softmax first, then processors (and warpers when sampling).
    at::Tensor scores = at::log_softmax(logits.to(at::kFloat), -1).contiguous();
    std::vector<sampling::LogitsRow> rows;
    append_logits_rows(rows);
    sampling::apply_logits_processors(scores, rows);
    if (params.do_sample) sampling::apply_logits_warpers(scores, rows);
    sampling::renormalize_logits(scores, rows);
    const auto step = beams->step(scores, beam_ids, generator);

    std::vector<std::vector<int64_t>> next;
    next.reserve(beam_ids.size());
    for (size_t j = 0; j < step.source.size(); ++j) {
        next.push_back(beam_ids[static_cast<size_t>(step.source[j])]);
        next.back().push_back(step.tokens[j]);
    }
    beam_ids = std::move(next);
    if (first_token.time_since_epoch().count() == 0) first_token = Clock::now();

    const bool at_limit = static_cast<int64_t>(beam_ids.front().size()) >= input_ids_length + max_new_tokens;
    if (beams->done() || at_limit) {
        const auto results = beams->finalize(beam_ids, params.num_return_sequences);
        const auto& best = results.front();
        if (params.num_return_sequences > 1) {
            for (const auto& h : results) {
                ReturnedSequence s;
                s.token_ids.assign(h.ids.begin() + input_ids_length, h.ids.end());
                if (tokenizer) s.text = tokenizer->decode(s.token_ids, /*skip_special_tokens=*/true);
                s.score = h.score;
                returned.push_back(std::move(s));
            }
        }
        // Stream the winner now; accept() applies eos/length exactly as for other requests.
        for (size_t i = static_cast<size_t>(input_ids_length); i < best.ids.size() && !finished; ++i)
            accept(sampling::TokenChoice{best.ids[i], std::numeric_limits<float>::quiet_NaN(), {}}, tokenizer);
        if (!finished) finish(FinishReason::Length);
    }
    return step.source;
}

std::vector<int64_t> LiveRequest::sample_rows_step(const at::Tensor& logits, const Tokenizer* tokenizer) {
    at::Tensor scores = logits.to(at::kFloat).contiguous().clone();
    std::vector<sampling::LogitsRow> rows;
    append_logits_rows(rows);
    sampling::process_logits(scores, rows);
    const auto choices = sampling::choose_next_tokens(scores, rows, std::vector<at::Generator>(rows.size(), generator));
    for (const auto& c : choices)
        if (!c.error.empty()) throw Error(ErrorKind::InvalidArgument, c.error);
    const auto row_alternatives = sampling::top_alternatives(scores, rows);
    if (first_token.time_since_epoch().count() == 0) first_token = Clock::now();

    const int64_t filler = params.eos_token_ids.empty() ? 0 : params.eos_token_ids.front();
    bool all_done = true;
    for (size_t j = 0; j < beam_ids.size(); ++j) {
        if (sample_row_done[j]) {
            beam_ids[j].push_back(filler);   // HF appends pad to ended rows; never read
            continue;
        }
        const int64_t token = choices[j].token_id;
        beam_ids[j].push_back(token);
        sample_row_logprobs[j].push_back(choices[j].logprob);
        if (!sample_row_alternatives.empty()) sample_row_alternatives[j].push_back(with_text(row_alternatives[j], tokenizer));
        const bool eos = !params.ignore_eos &&
                         std::find(params.eos_token_ids.begin(), params.eos_token_ids.end(), token) != params.eos_token_ids.end();
        const int64_t produced = static_cast<int64_t>(beam_ids[j].size()) - input_ids_length;
        sample_row_done[j] = eos || produced >= max_new_tokens;
        all_done = all_done && sample_row_done[j];
    }
    if (all_done) finish_sampled_rows(tokenizer);
    std::vector<int64_t> identity(beam_ids.size());
    for (size_t j = 0; j < identity.size(); ++j) identity[j] = static_cast<int64_t>(j);
    return identity;
}

namespace {

// LoRAX's router (generate_best_of): the mean of the tokens' logprobs, summed and divided in
// float32; a candidate replaces the best only when strictly greater (the first wins a tie), and
// the best starts at the lowest finite float, so that a candidate of -inf never wins over one that
// is finite.
size_t best_candidate(const std::vector<std::vector<float>>& logprobs, std::vector<float>& means) {
    size_t best = 0;
    float best_value = std::numeric_limits<float>::lowest();
    for (size_t j = 0; j < logprobs.size(); ++j) {
        float total = 0.0f;
        for (float lp : logprobs[j]) total += lp;
        means.push_back(total / static_cast<float>(logprobs[j].size()));
        if (means.back() > best_value) {
            best = j;
            best_value = means.back();
        }
    }
    return best;
}

}  // namespace

// Every row ended: the rows become the returned sequences (best_of: the best candidate first, the
// others in the order drawn) and the first one streams.
void LiveRequest::finish_sampled_rows(const Tokenizer* tokenizer) {
    std::vector<float> means;
    const size_t best = params.best_of > 1 ? best_candidate(sample_row_logprobs, means) : 0;
    std::vector<size_t> order{best};
    for (size_t j = 0; j < beam_ids.size(); ++j)
        if (j != best) order.push_back(j);
    for (size_t j : order) {
        ReturnedSequence s;
        s.token_ids.assign(beam_ids[j].begin() + input_ids_length, beam_ids[j].end());
        s.token_ids.resize(sample_row_logprobs[j].size());   // without the filler of ended rows
        if (tokenizer) s.text = tokenizer->decode(s.token_ids, /*skip_special_tokens=*/true);
        if (!means.empty()) s.score = means[j];
        if (params.logprobs) s.logprobs = sample_row_logprobs[j];
        if (!sample_row_alternatives.empty()) s.alternatives = sample_row_alternatives[j];
        returned.push_back(std::move(s));
    }
    const std::vector<int64_t> first = returned.front().token_ids;
    const std::vector<float> first_logprobs = sample_row_logprobs[best];
    for (size_t i = 0; i < first.size() && !finished; ++i)
        accept(sampling::TokenChoice{first[i], first_logprobs[i], {}}, tokenizer,
               sample_row_alternatives.empty() ? nullptr : &sample_row_alternatives[best][i]);
    if (!finished) finish(FinishReason::Length);
}

void LiveRequest::accept(const sampling::TokenChoice& choice, const Tokenizer* tokenizer,
                         const std::vector<TokenAlternative>* token_alternatives) {
    if (finished) return;
    const int64_t token = choice.token_id;
    generated.push_back(token);
    input_ids.push_back(token);
    if (params.logprobs) logprobs.push_back(choice.logprob);
    if (params.top_alternatives > 0) alternatives.push_back(token_alternatives ? *token_alternatives : std::vector<TokenAlternative>{});
    if (first_token.time_since_epoch().count() == 0) first_token = Clock::now();

    const std::string delta = detokenizer ? detokenizer->push(token) : std::string();
    auto step = stopping->push(token, delta, params.stop.empty() ? std::string() : token_piece(tokenizer, token));
    if ((step.reason == sampling::StopReason::Eos || step.reason == sampling::StopReason::Length) && detokenizer) {
        // The last token streams whatever the detokenizer still holds, so that the streamed
        // deltas add up to the final text.
        const std::string tail = detokenizer->finish();
        step.text += tail;
        stopping->append_final(tail);
    }
    TokenEvent event;
    event.id = id;
    event.token_id = token;
    event.text_delta = step.text;
    event.logprob = choice.logprob;
    event.special = tokenizer && tokenizer->is_special(token);
    event.client_id = client_id;
    if (token_alternatives) event.alternatives = *token_alternatives;
    if (sink) {
        std::string why;
        if (!emit_token(*sink, event, why)) {
            finish(FinishReason::Error, "the request's sink threw on a token: " + why);
            return;
        }
    }

    switch (step.reason) {
        case sampling::StopReason::None: break;
        case sampling::StopReason::Eos: finish(FinishReason::Eos); break;
        case sampling::StopReason::Length: finish(FinishReason::Length); break;
        case sampling::StopReason::Stop: finish(FinishReason::Stop); break;
    }
}

void LiveRequest::finish(FinishReason reason, const std::string& error) {
    if (finished) return;
    finished = true;
    const auto now = Clock::now();
    FinishEvent event;
    event.id = id;
    event.client_id = client_id;
    event.reason = reason;
    if (stopping) {
        if (reason != FinishReason::Stop) stopping->flush();
        event.text = stopping->text();
        if (reason == FinishReason::Stop) event.stop_sequence = stopping->matched_stop();
        // Bytes of an incomplete UTF-8 sequence the detokenizer still holds (rare at the very end).
        if (reason != FinishReason::Stop && detokenizer) event.text += detokenizer->finish();
    }
    event.token_ids = generated;
    event.logprobs = logprobs;
    event.alternatives = alternatives;
    event.prompt_logprobs = prompt_logprobs;
    if (reason != FinishReason::Error && reason != FinishReason::Cancelled) {
        event.sequences = returned;
        // The first is what was streamed; its text is the streamed text.
        if (!event.sequences.empty()) event.sequences.front().text = event.text;
    }
    event.error = error;
    event.usage.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
    event.usage.generated_tokens = static_cast<int64_t>(generated.size());
    const bool was_admitted = admitted.time_since_epoch().count() != 0;
    event.usage.queue_ms = ms_between(submitted, was_admitted ? admitted : now);
    if (!generated.empty()) event.usage.time_to_first_token_ms = ms_between(submitted, first_token);
    event.usage.total_ms = ms_between(submitted, now);
    if (sink) emit_finish(*sink, event);
}

}  // namespace lorascope::engine_detail
