#include "serve_responses.h"

#include <algorithm>

#include "serve_chat.h"

namespace lorascope::serve {

using nlohmann::json;

const char* const kSseKeepAlive = ":keep-alive\n\n";

namespace {

std::string dump(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

bool wants_alternatives(const ParsedRequest& r) { return r.request.params.top_alternatives.value_or(0) > 0; }

// LoRAX's AlternativeToken list: the k most likely tokens, most likely first.
json alternatives_json(const std::vector<TokenAlternative>* alternatives) {
    json list = json::array();
    if (alternatives)
        for (const auto& a : *alternatives)
            list.push_back({{"id", a.token_id}, {"text", a.text}, {"logprob", a.logprob}});
    return list;
}

// LoRAX's Token; alternative_tokens only when return_k_alternatives asked for them.
json token_json(const TokenEvent& t, bool alternatives) {
    json out = {{"id", t.token_id}, {"text", t.text_delta}, {"logprob", t.logprob}, {"special", t.special}};
    if (alternatives) out["alternative_tokens"] = alternatives_json(&t.alternatives);
    return out;
}

// decoder_input_details: a decoder-only model's prompt tokens with their logprobs (the first has
// none), or an encoder-decoder's decoder start token.
json prefill_json(const ParsedRequest& r, const FinishEvent& f, const ServedModel& model, const Tokenizer* tokenizer) {
    json prefill = json::array();
    if (!r.decoder_input_details) return prefill;
    if (!model.encoder_decoder) {
        for (const auto& t : f.prompt_logprobs)
            prefill.push_back(
                {{"id", t.token_id}, {"text", t.text}, {"logprob", t.logprob ? json(*t.logprob) : json()}});
    } else if (model.decoder_start_token_id) {
        const int64_t start = *model.decoder_start_token_id;
        prefill.push_back({{"id", start},
                           {"text", tokenizer ? tokenizer->decode({start}, false) : std::string()},
                           {"logprob", nullptr}});
    }
    return prefill;
}

// best_of's candidates other than the one returned (FinishEvent::sequences after the first), as
// LoRAX's BestOfSequence. Their tokens' texts are each token's own (the returned sequence's are
// its streamed deltas); best_of excludes stop sequences, so a candidate ended by eos or length.
json best_of_sequences(const ParsedRequest& r, const FinishEvent& f, const json& prefill, const ServedModel& model,
                       const Tokenizer* tokenizer) {
    const std::vector<int64_t>& eos = model.generation_config.eos_token_ids;
    json out = json::array();
    for (size_t i = 1; i < f.sequences.size(); ++i) {
        const ReturnedSequence& s = f.sequences[i];
        json tokens = json::array();
        for (size_t j = 0; j < s.token_ids.size(); ++j) {
            const int64_t id = s.token_ids[j];
            json t = {{"id", id},
                      {"text", tokenizer ? tokenizer->token_bytes(id, j == 0).value_or(std::string()) : std::string()},
                      {"logprob", j < s.logprobs.size() ? s.logprobs[j] : 0.0f},
                      {"special", tokenizer && tokenizer->is_special(id)}};
            if (wants_alternatives(r))
                t["alternative_tokens"] = alternatives_json(j < s.alternatives.size() ? &s.alternatives[j] : nullptr);
            tokens.push_back(std::move(t));
        }
        const auto n = static_cast<int64_t>(s.token_ids.size());
        const bool ended_by_eos = n > 0 && !r.request.params.ignore_eos.value_or(false) &&
                                  std::find(eos.begin(), eos.end(), s.token_ids.back()) != eos.end();
        out.push_back({{"generated_text", (r.return_full_text ? r.inputs : std::string()) + s.text},
                       {"finish_reason", ended_by_eos || n < r.max_new_tokens ? "eos_token" : "length"},
                       {"generated_tokens", n},
                       {"seed", r.seed ? json(*r.seed) : json(nullptr)},
                       {"prefill", prefill},
                       {"tokens", tokens}});
    }
    return out;
}

// What a finished request's text is beyond its streamed deltas: text the detokenizer flushed at
// the end. Empty when the deltas are not a prefix of it (a stop sequence cut the text).
std::string unstreamed_tail(const std::string& streamed, const std::string& full) {
    if (full.size() > streamed.size() && full.compare(0, streamed.size(), streamed) == 0) return full.substr(streamed.size());
    return {};
}

json lorax_details(const ParsedRequest& r, const FinishEvent& f, const std::vector<TokenEvent>& tokens,
                   const ServedModel& model, const Tokenizer* tokenizer) {
    const json prefill = prefill_json(r, f, model, tokenizer);
    json list = json::array();
    for (const auto& t : tokens) list.push_back(token_json(t, wants_alternatives(r)));
    json details = {{"finish_reason", lorax_finish_reason(f.reason)},
                    {"prompt_tokens", f.usage.prompt_tokens},
                    {"generated_tokens", f.usage.generated_tokens},
                    {"skipped_tokens", 0},
                    {"seed", r.seed ? json(*r.seed) : json(nullptr)},
                    {"prefill", prefill},
                    {"tokens", list}};
    if (r.request.params.best_of.value_or(1) > 1)
        details["best_of_sequences"] = best_of_sequences(r, f, prefill, model, tokenizer);
    return details;
}

void timing_headers(Reply& reply, const ParsedRequest& r, const FinishEvent& f, const ServedModel& model) {
    auto ms = [](double v) { return std::to_string(static_cast<int64_t>(v)); };
    reply.headers.emplace_back("x-model-id", model.model_id);
    // A local adapter's label is the client's path: never a header unless it is plain text.
    const bool printable = std::all_of(r.adapter_label.begin(), r.adapter_label.end(),
                                       [](char c) { return c >= 0x20 && c < 0x7f; });
    if (!r.adapter_label.empty() && printable) reply.headers.emplace_back("x-adapter-id", r.adapter_label);
    reply.headers.emplace_back("x-prompt-tokens", std::to_string(f.usage.prompt_tokens));
    reply.headers.emplace_back("x-generated-tokens", std::to_string(f.usage.generated_tokens));
    reply.headers.emplace_back("x-queue-time", ms(f.usage.queue_ms));
    reply.headers.emplace_back("x-inference-time", ms(f.usage.total_ms - f.usage.queue_ms));
    reply.headers.emplace_back("x-time-to-first-token", ms(f.usage.time_to_first_token_ms));
}

// One token's entry in /v1/completions' top_logprobs, as vLLM builds it: {text: logprob} for the
// chosen token and the k most likely ones (k + 1 entries when the chosen one is not among them),
// any -inf written as -9999.0 as vLLM does (JSON has no infinity; the engine leaves out the tokens
// a processor ruled out, so none is expected). Tokens are keyed by text, so two with the same
// text make one entry: the chosen token's, else the more likely one's.
json completion_top_logprobs(const TokenEvent& t, int64_t k) {
    auto finite = [](double v) { return std::max(v, -9999.0); };
    json entry = json::object();
    entry[t.text_delta] = finite(t.logprob);
    for (size_t i = 0; i < t.alternatives.size() && static_cast<int64_t>(i) < k; ++i) {
        const TokenAlternative& a = t.alternatives[i];
        if (a.token_id != t.token_id && !entry.contains(a.text)) entry[a.text] = finite(a.logprob);
    }
    return entry;
}

json openai_usage(const FinishEvent& f) {
    const int64_t p = f.usage.prompt_tokens, g = f.usage.generated_tokens;
    return {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}};
}

}  // namespace

Reply json_reply(int status, const json& body) {
    Reply reply;
    reply.status = status;
    reply.body = dump(body);
    return reply;
}

Reply error_reply(const HttpError& error) { return json_reply(error.status(), error_body(error.what(), error.error_type())); }

std::string sse_event(const json& data) { return "data:" + dump(data) + "\n\n"; }

std::vector<std::pair<std::string, std::string>> stream_headers(const ServedModel& model) {
    return {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}, {"x-model-id", model.model_id}};
}

HttpError finish_error(const FinishEvent& f) {
    if (f.reason == FinishReason::Error)
        return HttpError(424, "generation", "generation failed: " + client_error_text(f.error));
    return HttpError(503, "incomplete_generation", "the request was cancelled: the server is shutting down");
}

Reply lorax_whole_reply(const ParsedRequest& r, const FinishEvent& f, const std::vector<TokenEvent>& tokens,
                        const ServedModel& model, const Tokenizer* tokenizer, bool wrap_in_list) {
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) return error_reply(finish_error(f));
    json out = {{"generated_text", (r.return_full_text ? r.inputs : std::string()) + f.text}};
    if (r.details || r.decoder_input_details) out["details"] = lorax_details(r, f, tokens, model, tokenizer);
    Reply reply = json_reply(200, wrap_in_list ? json::array({out}) : out);
    timing_headers(reply, r, f, model);
    return reply;
}

Reply openai_whole_reply(const ParsedRequest& r, const FinishEvent& f, const std::vector<TokenEvent>& tokens,
                         const std::string& completion_id, int64_t created) {
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) return error_reply(finish_error(f));
    const std::string prefix = r.echo ? r.inputs : std::string();
    json logprobs = nullptr;
    if (r.openai_logprobs) {
        json texts = json::array(), lps = json::array(), top = json::array(), offsets = json::array();
        int64_t offset = static_cast<int64_t>(prefix.size());
        for (const auto& t : tokens) {
            texts.push_back(t.text_delta);
            lps.push_back(t.logprob);
            top.push_back(completion_top_logprobs(t, r.top_logprobs));
            offsets.push_back(offset);
            offset += static_cast<int64_t>(t.text_delta.size());
        }
        logprobs = {{"tokens", texts}, {"token_logprobs", lps}, {"top_logprobs", top}, {"text_offset", offsets}};
    }
    return json_reply(200, {{"id", completion_id},
                            {"object", "text_completion"},
                            {"created", created},
                            {"model", r.model},
                            {"choices", json::array({{{"index", 0},
                                                      {"text", prefix + f.text},
                                                      {"logprobs", logprobs},
                                                      {"finish_reason", openai_finish_reason(f.reason)},
                                                      {"stop_reason", openai_stop_reason(f)}}})},
                            {"usage", openai_usage(f)}});
}

StreamWriter::StreamWriter(const ParsedRequest& request, bool openai, std::string completion_id, int64_t created)
    : request_(request), openai_(openai), completion_id_(std::move(completion_id)), created_(created) {}

json StreamWriter::openai_chunk(const std::string& text, const TokenEvent* token, const FinishEvent* finish) const {
    if (request_.chat) return openai_chat_chunk(request_, completion_id_, created_, text, token, finish);
    json choice = {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (request_.openai_logprobs && token)
        choice["logprobs"] = {{"tokens", {token->text_delta}},
                              {"token_logprobs", {token->logprob}},
                              {"top_logprobs", json::array({completion_top_logprobs(*token, request_.top_logprobs)})},
                              {"text_offset", {static_cast<int64_t>(streamed_.size())}}};
    json chunk = {{"id", completion_id_}, {"object", "text_completion"}, {"created", created_},
                  {"model", request_.model}, {"choices", json::array({choice})}};
    if (finish) {
        chunk["choices"][0]["finish_reason"] = openai_finish_reason(finish->reason);
        chunk["choices"][0]["stop_reason"] = openai_stop_reason(*finish);
        chunk["usage"] = openai_usage(*finish);
    }
    return chunk;
}

std::string StreamWriter::begin() {
    if (openai_ && request_.chat)   // a chat stream opens with the assistant's role
        return sse_event(openai_chat_chunk(request_, completion_id_, created_, "", nullptr, nullptr, true));
    if (!openai_ || !request_.echo) return {};
    const std::string out = sse_event(openai_chunk(request_.inputs, nullptr, nullptr));
    streamed_ = request_.inputs;
    return out;
}

std::string StreamWriter::token(const TokenEvent& t) {
    if (openai_) {
        const std::string out = sse_event(openai_chunk(t.text_delta, &t, nullptr));
        streamed_ += t.text_delta;
        return out;
    }
    std::optional<TokenEvent> previous = std::move(held_);
    held_ = t;
    if (!previous) return {};
    return sse_event({{"token", token_json(*previous, wants_alternatives(request_))}, {"generated_text", nullptr},
                      {"details", nullptr}});
}

std::string StreamWriter::finish(const FinishEvent& f) {
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) {
        const HttpError err = finish_error(f);
        return sse_event(error_body(err.what(), err.error_type()));
    }
    if (openai_) {
        const std::string full = (request_.echo ? request_.inputs : std::string()) + f.text;
        return sse_event(openai_chunk(unstreamed_tail(streamed_, full), nullptr, &f)) + "data: [DONE]\n\n";
    }
    if (!held_) {
        const HttpError err(500, "incomplete_generation", "the request finished without generating a token");
        return sse_event(error_body(err.what(), err.error_type()));
    }
    json details = nullptr;
    if (request_.details)
        details = {{"finish_reason", lorax_finish_reason(f.reason)},
                   {"prompt_tokens", f.usage.prompt_tokens},
                   {"generated_tokens", f.usage.generated_tokens},
                   {"seed", request_.seed ? json(*request_.seed) : json(nullptr)}};
    const std::string text = (request_.return_full_text ? request_.inputs : std::string()) + f.text;
    return sse_event({{"token", token_json(*held_, wants_alternatives(request_))}, {"generated_text", text},
                      {"details", details}});
}

}  // namespace lorascope::serve
