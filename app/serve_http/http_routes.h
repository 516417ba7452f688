// The routes of `lorascope-cli serve`: LoRAX's POST /, /generate and /generate_stream, OpenAI's
// /v1/completions and /v1/chat/completions (serve_chat.h), and GET /health, /info, /metrics and /v1/models. A request is decided in two
// steps, so that nothing of an unwanted body is ever read: on_head (on the I/O thread) answers
// from the request line and headers alone (unknown route, too many headers, wrong or missing
// token, draining, an announced body over the limit, and every GET); once the body is in, a
// --max-connections slot is taken (429 when none is left) and on_body (on a worker thread)
// parses, validates, tokenizes and submits.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "serve_context.h"
#include "serve_responses.h"
#include "serve_session.h"

namespace lorascope::serve {

using RequestHead = boost::beast::http::request_header<>;

enum class Route { None, Root, Generate, GenerateStream, Completions, ChatCompletions, Health, Info, Metrics, Models };

struct HeadDecision {
    Route route = Route::None;
    std::optional<Reply> reply;   // answered from the head: the body is not read
    int64_t body_bytes = 0;       // what reading the body may take: Content-Length, or the limit
};

struct BodyOutcome {
    std::optional<Reply> reply;              // an error, answered at once
    std::unique_ptr<Generation> generation;  // or the request, submitted
};

class Routes {
public:
    explicit Routes(ServeContext& context) : context_(context) {}

    HeadDecision on_head(const RequestHead& head) const;
    // Once the body is read: one of --max-connections' slots, or `reply` (429) when all are taken.
    ServingSlot take_slot(std::optional<Reply>& reply) const;
    // `notify` as for EventQueue: runs on the engine thread when the generation has events.
    BodyOutcome on_body(Route route, const std::string& body, Clock::time_point received,
                        std::function<void()> notify) const;

    // The HTTP layer's own refusals in LoRAX's error shape: 400 (malformed HTTP), 413 (a body over
    // --max-body-bytes while it is read), 431 (headers over --max-header-bytes).
    Reply refusal(int status) const;

private:
    std::optional<Reply> check_token(const RequestHead& head) const;
    Reply get(Route route) const;

    ServeContext& context_;
};

}  // namespace lorascope::serve
