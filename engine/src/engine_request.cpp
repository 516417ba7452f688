#include "engine_request.h"

#include <random>

#include "lorascope/error.h"
#include "models/model.h"

namespace lorascope::engine_detail {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void LiveRequest::prepare(const Request& request, const models::Model& model, const Tokenizer* tokenizer) {
    const std::string source = "request " + (client_id.empty() ? std::to_string(id) : client_id);
    params = resolve(request.params, model.generation_config(), source);
    if (params.num_beams > 1)
        throw Error(ErrorKind::Unsupported, source,
                    "num_beams > 1: beam search is not available in the engine yet; use num_beams 1");
    if (!request.adapter.empty())
        throw Error(ErrorKind::NotFound, source, "no adapter named '" + request.adapter + "' is loaded");

    if (request.prompt) {
        if (!tokenizer)
            throw Error(ErrorKind::InvalidArgument, source,
                        "a text prompt needs tokenizer files in " + model.directory() + "; send input_ids instead");
        prompt_ids = tokenizer->encode(*request.prompt, true);
    } else {
        prompt_ids = request.input_ids;
    }
    if (prompt_ids.empty())
        throw Error(ErrorKind::InvalidArgument, source, "the prompt is empty (no input ids)");
    for (int64_t t : prompt_ids)
        if (t < 0 || t >= model.vocab_size())
            throw Error(ErrorKind::InvalidArgument, source,
                        "input id " + std::to_string(t) + " is outside the vocabulary [0, " +
                            std::to_string(model.vocab_size()) + ")");

    if (model.is_encoder_decoder()) {
        input_ids = {model.decoder_start_token_id()};
    } else {
        input_ids = prompt_ids;
    }
    input_ids_length = static_cast<int64_t>(input_ids.size());
    max_new_tokens = params.max_new_tokens_for(input_ids_length);

    if (params.do_sample) {
        if (!params.seed) params.seed = std::random_device{}();
        generator = sampling::make_request_generator(*params.seed);
    }
    if (tokenizer) detokenizer = std::make_unique<StreamingDetokenizer>(*tokenizer, true);
    stopping = std::make_unique<sampling::StoppingCriteria>(params, max_new_tokens);
}

scheduler::Demand LiveRequest::demand() const {
    scheduler::Demand d;
    d.id = id;
    d.rows = params.num_beams;
    d.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
    d.max_new_tokens = max_new_tokens;
    d.skipped = skipped;
    return d;
}

sampling::LogitsRow LiveRequest::logits_row() const {
    sampling::LogitsRow row;
    row.params = &params;
    row.input_ids = &input_ids;
    row.input_ids_length = input_ids_length;
    return row;
}

void LiveRequest::accept(const sampling::TokenChoice& choice, const Tokenizer* tokenizer) {
    if (finished) return;
    const int64_t token = choice.token_id;
    generated.push_back(token);
    input_ids.push_back(token);
    if (params.logprobs) logprobs.push_back(choice.logprob);
    if (generated.size() == 1) first_token = Clock::now();

    const std::string delta = detokenizer ? detokenizer->push(token) : std::string();
    const auto step = stopping->push(token, delta);
    TokenEvent event;
    event.id = id;
    event.token_id = token;
    event.text_delta = step.text;
    event.logprob = choice.logprob;
    event.special = tokenizer && tokenizer->is_special(token);
    if (sink) sink->on_token(event);

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
    event.reason = reason;
    if (stopping) {
        if (reason != FinishReason::Stop) stopping->flush();
        event.text = stopping->text();
        // Bytes of an incomplete UTF-8 sequence the detokenizer still holds (rare at the very end).
        if (reason != FinishReason::Stop && detokenizer) event.text += detokenizer->finish();
    }
    event.token_ids = generated;
    event.logprobs = logprobs;
    event.error = error;
    event.usage.prompt_tokens = static_cast<int64_t>(prompt_ids.size());
    event.usage.generated_tokens = static_cast<int64_t>(generated.size());
    const bool was_admitted = admitted.time_since_epoch().count() != 0;
    event.usage.queue_ms = ms_between(submitted, was_admitted ? admitted : now);
    if (!generated.empty()) event.usage.time_to_first_token_ms = ms_between(submitted, first_token);
    event.usage.total_ms = ms_between(submitted, now);
    if (sink) sink->on_finish(event);
}

}  // namespace lorascope::engine_detail
