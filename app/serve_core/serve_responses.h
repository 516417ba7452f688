// The answers of `lorascope-cli serve` as data: whole replies (LoRAX's /generate, OpenAI's
// completion) and the Server-Sent Events of a stream, in LoRAX's framing (`data:{json}\n\n`, one
// event per token, keep-alive comment lines) and OpenAI's (chunks, then `data: [DONE]`). Pure
// functions of a request's ParsedRequest, its tokens and its FinishEvent: no socket, no thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lorascope/engine.h"
#include "lorascope/tokenizer.h"
#include "serve_protocol.h"

namespace lorascope::serve {

// One HTTP answer, whatever carries it.
struct Reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    bool close = false;   // the connection ends after it (a refusal whose body was not read)
};

Reply json_reply(int status, const nlohmann::json& body);
Reply error_reply(const HttpError& error);

// An SSE event carrying `data`, and the comment line a stream sends while it has nothing to say
// (proxies and clients then keep the connection).
std::string sse_event(const nlohmann::json& data);
extern const char* const kSseKeepAlive;

// The headers of a stream's 200 before its first event.
std::vector<std::pair<std::string, std::string>> stream_headers(const ServedModel& model);

// A failed or cancelled request's answer; `engine_error` goes through client_error_text.
HttpError finish_error(const FinishEvent& finish);

// Whole answers, from every token of the request and its finish.
Reply lorax_whole_reply(const ParsedRequest& request, const FinishEvent& finish, const std::vector<TokenEvent>& tokens,
                        const ServedModel& model, const Tokenizer* tokenizer, bool wrap_in_list);
Reply openai_whole_reply(const ParsedRequest& request, const FinishEvent& finish, const std::vector<TokenEvent>& tokens,
                         const std::string& completion_id, int64_t created);

// One stream's progress and the events it sends.
class StreamWriter {
public:
    StreamWriter(const ParsedRequest& request, bool openai, std::string completion_id, int64_t created);
    // What goes first (OpenAI's echoed prompt), possibly nothing.
    std::string begin();
    // A token's events. LoRAX's stream holds back one token, because the engine says a request
    // finished only after its last token, and LoRAX's last event carries that token.
    std::string token(const TokenEvent& token);
    // The last events: an {error, error_type} event when the request failed, OpenAI's last chunk
    // and [DONE], or LoRAX's last token with generated_text and details.
    std::string finish(const FinishEvent& finish);

private:
    nlohmann::json openai_chunk(const std::string& text, const TokenEvent* token, const FinishEvent* finish) const;

    const ParsedRequest& request_;
    bool openai_;
    std::string completion_id_;
    int64_t created_;
    std::optional<TokenEvent> held_;
    std::string streamed_;   // OpenAI: text sent so far (for text_offset)
};

}  // namespace lorascope::serve
