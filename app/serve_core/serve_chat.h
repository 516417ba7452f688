// `lorascope-cli serve`'s chat routes: OpenAI's POST /v1/chat/completions (as vLLM and LoRAX serve
// it: `model` names the base model or an adapter) and LoRAX's chat form, /generate with
// parameters.apply_chat_template and the messages as JSON text in `inputs`. The conversation is
// rendered with the served model's own chat template (lorascope/chat.h) before anything is
// submitted, so that a template's refusal is a 422 naming it, never an error inside a stream.
// Pure functions of JSON and the model's templates: no socket, no engine thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "lorascope/chat.h"
#include "lorascope/engine.h"
#include "serve_protocol.h"
#include "serve_responses.h"

namespace lorascope::serve {

// POST /v1/chat/completions. The sampling fields are /v1/completions' (parse_openai_completion:
// same names, ranges and defaults); `messages` (content a string, null, or a list of text parts),
// `tools` and vLLM's `chat_template_kwargs` make the conversation; `logprobs` (true/false) and
// `top_logprobs` (0-20, the engine's top_alternatives); vLLM's `return_tokens_as_token_ids` names
// each token "token_id:N". Anything else, or a wrong type, is HttpError 422 naming the field.
ParsedRequest parse_openai_chat(const nlohmann::json& body, const ServedModel& model);

// LoRAX's chat form: `inputs` holds the messages as a JSON array (as LoRAX's own
// /v1/chat/completions hands them to its /generate). Malformed: HttpError 422.
Conversation lorax_chat_inputs(const std::string& inputs);

// Renders `request.conversation` with the model's template (add_generation_prompt) into
// request.inputs, tokenized later without added special tokens, as apply_chat_template(tokenize=
// True). No template (`templates` null): HttpError 400 saying so; the template's refusal
// (raise_exception) or a limit reached: HttpError 422 with the template's message.
void render_chat(ParsedRequest& request, const ModelChatTemplates* templates);

// The whole answer: object "chat.completion", one choice whose message is the assistant's text.
Reply openai_chat_whole_reply(const ParsedRequest& request, const FinishEvent& finish,
                              const std::vector<TokenEvent>& tokens, const std::string& completion_id,
                              int64_t created);

// A stream's "chat.completion.chunk": the first one (`role_only`: the assistant role, empty
// content), one per token (its text and, when asked, its logprobs), the last one with the text
// the detokenizer flushed at the end, finish_reason and usage.
nlohmann::json openai_chat_chunk(const ParsedRequest& request, const std::string& completion_id, int64_t created,
                                 const std::string& text, const TokenEvent* token, const FinishEvent* finish,
                                 bool role_only = false);

}  // namespace lorascope::serve
