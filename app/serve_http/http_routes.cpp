#include "http_routes.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>

#include <cstdio>

#include "lorascope/error.h"
#include "serve_chat.h"

namespace lorascope::serve {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// The route a method and path name; the query string, if any, is ignored.
Route route_of(http::verb method, std::string_view target) {
    const std::string_view path = target.substr(0, target.find('?'));
    if (method == http::verb::post) {
        if (path == "/") return Route::Root;
        if (path == "/generate") return Route::Generate;
        if (path == "/generate_stream") return Route::GenerateStream;
        if (path == "/v1/completions") return Route::Completions;
        if (path == "/v1/chat/completions") return Route::ChatCompletions;
    } else if (method == http::verb::get) {
        if (path == "/health") return Route::Health;
        if (path == "/info") return Route::Info;
        if (path == "/metrics") return Route::Metrics;
        if (path == "/v1/models") return Route::Models;
    }
    return Route::None;
}

bool generates(Route route) {
    return route == Route::Root || route == Route::Generate || route == Route::GenerateStream ||
           route == Route::Completions || route == Route::ChatCompletions;
}

// Equal-time comparison: the time a wrong token takes to reject says nothing about the right one.
bool same_secret(std::string_view a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
    return diff == 0;
}

// Content-Length as announced (the HTTP parser has checked its syntax); 0 when absent, INT64_MAX
// when it does not fit.
int64_t announced_length(const RequestHead& head) {
    const auto field = head[http::field::content_length];
    if (field.size() > 18) return INT64_MAX;
    int64_t n = 0;
    for (char c : field) {
        if (c < '0' || c > '9') return INT64_MAX;
        n = n * 10 + (c - '0');
    }
    return n;
}

bool chunked(const RequestHead& head) {
    for (const auto& coding : http::token_list{head[http::field::transfer_encoding]})
        if (boost::beast::iequals(coding, "chunked")) return true;
    return false;
}

Reply closing(Reply reply) {
    reply.close = true;
    return reply;
}

// At most 100 characters of client text in a message, so that an answer never echoes a request.
std::string quoted(std::string_view text) {
    std::string out(text.substr(0, 100));
    if (text.size() > 100) out += "...";
    return out;
}

}  // namespace

std::optional<Reply> Routes::check_token(const RequestHead& head) const {
    const std::string& token = context_.options.api_token;
    if (token.empty()) return std::nullopt;
    const auto auth = head[http::field::authorization];
    const std::string_view prefix = "Bearer ";
    const std::string_view value(auth.data(), auth.size());
    if (value.substr(0, prefix.size()) == prefix && same_secret(value.substr(prefix.size()), token)) return std::nullopt;
    return closing(error_reply(HttpError(401, "authentication",
                                         "missing or wrong API token: send the header 'Authorization: Bearer <token>'")));
}

HeadDecision Routes::on_head(const RequestHead& head) const {
    HeadDecision d;
    const std::string_view target(head.target().data(), head.target().size());
    d.route = route_of(head.method(), target);
    if (d.route == Route::None) {
        const std::string_view method(head.method_string().data(), head.method_string().size());
        d.reply = closing(error_reply(HttpError(404, "not_found", "no route " + quoted(method) + " " + quoted(target))));
        return d;
    }
    if (std::distance(head.begin(), head.end()) > context_.options.limits.max_header_fields) {
        d.reply = closing(refusal(431));
        return d;
    }
    Metrics& metrics = *context_.metrics;
    if (generates(d.route)) metrics.on_request_received();
    if (d.route == Route::Health) {
        if (context_.draining) d.reply = closing(error_reply(HttpError(503, "healthcheck", "the server is shutting down")));
        else d.reply = get(d.route);
        return d;
    }
    if (auto refused = check_token(head)) {
        d.reply = std::move(refused);
        return d;
    }
    if (!generates(d.route)) {
        d.reply = get(d.route);
        // A GET that announces a body: it is not read, so the connection cannot go on after it.
        if (announced_length(head) > 0 || chunked(head)) d.reply->close = true;
        return d;
    }
    if (context_.draining) {
        metrics.on_request_refused("shutting_down");
        d.reply = closing(error_reply(HttpError(503, "unavailable", "the server is shutting down")));
        return d;
    }
    const int64_t announced = announced_length(head);
    if (announced > context_.options.limits.max_body_bytes) {
        metrics.on_request_refused("payload_too_large");
        d.reply = closing(refusal(413));
        return d;
    }
    d.body_bytes = chunked(head) ? context_.options.limits.max_body_bytes : announced;
    return d;
}

ServingSlot Routes::take_slot(std::optional<Reply>& reply) const {
    ServingSlot slot = context_.try_take_slot();
    if (slot) return slot;
    context_.metrics->on_request_refused("overloaded");
    context_.metrics->on_connection_refused();
    reply = closing(error_reply(HttpError(
        429, "overloaded",
        "too many connections: this server serves " + std::to_string(context_.options.limits.max_connections) +
            " at once (--max-connections); retry later")));
    return slot;
}

Reply Routes::get(Route route) const {
    switch (route) {
        case Route::Health: return Reply{};
        case Route::Info: return json_reply(200, context_.info);
        case Route::Metrics: {
            Reply r;
            r.content_type = "text/plain; version=0.0.4";
            r.body = context_.metrics->render();
            return r;
        }
        default: break;
    }
    const ServedModel& model = context_.model;
    json data = json::array({{{"id", model.model_id}, {"object", "model"}, {"owned_by", "lorascope"}}});
    for (const auto& a : model.adapters)
        data.push_back({{"id", a}, {"object", "model"}, {"owned_by", "lorascope"}, {"parent", model.model_id}});
    return json_reply(200, {{"object", "list"}, {"data", data}});
}

BodyOutcome Routes::on_body(Route route, const std::string& text, Clock::time_point received,
                            std::function<void()> notify) const {
    BodyOutcome out;
    Metrics& metrics = *context_.metrics;
    try {
        json body;
        try {
            body = parse_json_object(text);
        } catch (const HttpError&) {
            metrics.on_request_refused("bad_request");
            throw;
        }
        const ServedModel& model = context_.model;
        const Dialect dialect =
            route == Route::Completions || route == Route::ChatCompletions ? Dialect::OpenAI : Dialect::Lorax;
        const std::optional<bool> stream_by_route =
            route == Route::Generate ? std::optional<bool>(false)
            : route == Route::GenerateStream ? std::optional<bool>(true) : std::nullopt;
        ParsedRequest parsed = route == Route::ChatCompletions ? parse_openai_chat(body, model)
                               : dialect == Dialect::OpenAI    ? parse_openai_completion(body, model)
                                                               : parse_lorax_request(body, model, stream_by_route);
        render_chat(parsed, context_.engine.chat_templates());   // conversations only (chat routes)
        context_.prepare_request(parsed);                        // local adapters, then the budget
        out.generation = std::make_unique<Generation>(context_, std::move(parsed), dialect, route == Route::Root, received);
        out.generation->start(std::move(notify));
    } catch (const HttpError& e) {
        if (e.error_type() == "validation") metrics.on_request_refused("validation");
        out.reply = error_reply(e);
    } catch (const std::exception& e) {
        // Not the client's doing: the log keeps the detail, the client gets one line.
        std::fprintf(stderr, "lorascope-cli serve: a request failed inside the server: %s\n", e.what());
        metrics.on_request_refused("internal");
        out.reply = error_reply(HttpError(500, "internal", "internal error: " + client_error_text(e.what())));
    }
    return out;
}

Reply Routes::refusal(int status) const {
    const auto& limits = context_.options.limits;
    if (status == 413)
        return closing(error_reply(HttpError(413, "validation", "the request body is larger than " +
                                                                    std::to_string(limits.max_body_bytes) +
                                                                    " bytes (--max-body-bytes)")));
    if (status == 431)
        return closing(error_reply(HttpError(431, "invalid_input",
                                             "the request's headers are larger than " +
                                                 std::to_string(limits.max_header_bytes) + " bytes or more than " +
                                                 std::to_string(limits.max_header_fields) + " fields")));
    return closing(error_reply(HttpError(status, "invalid_input", "bad request: not HTTP/1.1 this server can read")));
}

}  // namespace lorascope::serve
