// `lorascope-cli serve`: LoRAX's request and response JSON (router/src/lib.rs of predibase/lorax)
// and the OpenAI completions dialect, mapped onto the engine's Request and GenerationParams by the
// engine library's one parameter parser (lorascope/params_json.h), which bounds every value.
// Pure functions of JSON: no sockets, no engine thread, so that every rule here is testable alone.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lorascope/config.h"
#include "lorascope/engine.h"
#include "lorascope/local_adapters.h"
#include "lorascope/params.h"
#include "lorascope/tokenizer.h"

namespace lorascope::serve {

// An answer other than 200, carried with LoRAX's error shape {"error", "error_type"}. error_type
// uses LoRAX's words where they apply ("validation", "generation", "overloaded",
// "incomplete_generation") so that lorax-client raises the matching exception.
class HttpError : public std::runtime_error {
public:
    HttpError(int status, std::string error_type, const std::string& message)
        : std::runtime_error(message), status_(status), error_type_(std::move(error_type)) {}
    int status() const noexcept { return status_; }
    const std::string& error_type() const noexcept { return error_type_; }

private:
    int status_;
    std::string error_type_;
};

nlohmann::json error_body(const std::string& message, const std::string& error_type);

// What request parsing needs to know about the model being served.
struct ServedModel {
    std::string model_id;                  // /info's model_id; OpenAI's `model` naming the base
    std::vector<std::string> adapters;     // names loaded at start-up (--adapter)
    std::map<std::string, int64_t> adapter_ranks;   // their r: a merge of unequal ones is refused (422)
    GenerationConfig generation_config;
    bool encoder_decoder = true;
    std::optional<int64_t> decoder_start_token_id;
    ParamLimits params;                    // stop strings' count and bytes, the params' JSON bounds
    RequestBudget budget;                  // the engine's limits: prompt + new tokens, rows
};

struct ParsedRequest {
    Request request;                       // what the engine runs
    std::string inputs;                    // the prompt text
    std::string adapter_label;             // adapter name, or "" for the base model
    bool stream = false;
    bool details = false;
    bool decoder_input_details = false;
    bool return_full_text = false;
    bool sampling = false;                 // after LoRAX's rule (see parse_lorax_request)
    std::optional<uint64_t> seed;          // the seed sampling runs with (reported in details)
    // adapter_source "local": the adapter's path under --adapter-dir, loaded by prepare_request.
    std::optional<std::string> local_adapter;
    int64_t max_new_tokens = 0;            // as the engine resolves it (fit_to_budget)
    // OpenAI dialect
    std::string model;                     // echoed back
    bool openai_logprobs = false;
    bool echo = false;
    // Chat routes (serve_chat.h)
    std::optional<Conversation> conversation;   // rendered into `inputs` by render_chat
    bool chat = false;                          // answered in OpenAI's chat shapes
    bool add_special_tokens = true;             // false for a rendered conversation: its template wrote them
    int64_t top_logprobs = 0;                   // alternatives per token in logprobs (chat: top_logprobs;
                                                // completions: logprobs)
    bool tokens_as_ids = false;                 // chat: vLLM's return_tokens_as_token_ids
};

// Parses a request body with its nesting bounded (64 levels) while parsing. Malformed or too deep
// JSON, or a body that is not an object, is HttpError 400 ("invalid_input") quoting the parser's
// message and position.
nlohmann::json parse_json_object(const std::string& body);

// POST / (stream from the body's "stream"), /generate (stream = false), /generate_stream
// (stream = true). Unknown adapters and unsupported or out-of-range parameters (the ranges of
// check_generation_params) are HttpError 422 ("validation") naming the parameter. LoRAX samples
// when do_sample is true or any of temperature != 1, top_k, top_p < 1, typical_p < 1 is given
// (its NextTokenChooser); so does this. What the model weighed maps onto the engine's issue-32
// parameters: return_k_alternatives -> top_alternatives, decoder_input_details -> prompt_logprobs
// (decoder-only models; encoder-decoders report their decoder start token), merged_adapters ->
// Request::merge (of adapters loaded at start-up), best_of and truncate as they are, with LoRAX's
// rules (best_of > 1 needs sampling, no seed and no stream; decoder_input_details no stream).
ParsedRequest parse_lorax_request(const nlohmann::json& body, const ServedModel& model,
                                  std::optional<bool> stream_by_route);

// POST /v1/completions. `model` selects an adapter (the base when it is "" or the served
// model_id). As OpenAI and vLLM do, temperature defaults to 1 and 0 means greedy decoding.
// `logprobs: k` (0 to 20, vLLM's bound) returns each chosen token's logprob and, in top_logprobs,
// the k most likely tokens beside it (the engine's top_alternatives).
ParsedRequest parse_openai_completion(const nlohmann::json& body, const ServedModel& model);

// Tokenizes the prompt (the request then carries its ids, so that the engine does not tokenize it
// again) and checks prompt + max_new_tokens against the engine's budget and the model's positions
// (check_request_budget): over it is HttpError 422 ("validation"), as LoRAX answers, before any
// stream has started. A model without tokenizer files cannot take text prompts: 422 too.
void fit_to_budget(ParsedRequest& request, const ServedModel& model, const Tokenizer* tokenizer);

// adapter_source "local": the adapter directory `requested` names under `directory` (null: the
// server has no --adapter-dir), registered with the engine once, and its engine name. A path
// outside the directory (.., an absolute path elsewhere, a symbolic link leaving it) or one that
// does not exist is HttpError 422 ("validation") in LoRAX's error shape, without server paths.
std::string load_local_adapter_for(const std::string& requested, const AdapterDirectory* directory, Engine& engine);

// What a client is told of an engine failure: its first line, absolute paths replaced by
// "<path>", at most 300 characters. The server's log keeps the whole message.
std::string client_error_text(const std::string& engine_error);

// Finish reasons in LoRAX's words: "length", "eos_token", "stop_sequence".
const char* lorax_finish_reason(FinishReason reason);
// ... and in OpenAI's: "length" or "stop".
const char* openai_finish_reason(FinishReason reason);
// vLLM's extension of OpenAI's choice: the stop string that ended it, null otherwise (finish_reason
// is "stop" for both eos and a stop string; clients tell them apart by this).
nlohmann::json openai_stop_reason(const FinishEvent& finish);

}  // namespace lorascope::serve
