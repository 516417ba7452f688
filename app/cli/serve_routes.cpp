// LoRAX's and OpenAI's routes of `lorascope-cli serve` (serve_server.h runs the server).
#include "serve_routes.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "lorascope/error.h"
#include "serve_connection.h"
#include "serve_server.h"

namespace lorascope::cli::serve {

using httplib::ContentReader;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);
constexpr auto kKeepAliveInterval = std::chrono::seconds(5);

json token_json(const TokenEvent& t) {
    return {{"id", t.token_id}, {"text", t.text_delta}, {"logprob", t.logprob}, {"special", t.special}};
}

void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const HttpError& e) { send_json(res, e.status(), error_body(e.what(), e.error_type())); }

// Equal-time comparison: the time a wrong token takes to reject says nothing about the right one.
bool same_secret(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
    return diff == 0;
}

std::string sse(const json& data) { return "data:" + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

// What a finished request's text is beyond its streamed deltas: text the detokenizer flushed at
// the end. Empty when the deltas are not a prefix of it (a stop sequence cut the text).
std::string unstreamed_tail(const std::string& streamed, const std::string& full) {
    if (full.size() > streamed.size() && full.compare(0, streamed.size(), streamed) == 0) return full.substr(streamed.size());
    return {};
}

HttpError finish_error(const FinishEvent& f) {
    if (f.reason == FinishReason::Error) return HttpError(424, "generation", "generation failed: " + f.error);
    return HttpError(503, "incomplete_generation", "the request was cancelled: the server is shutting down");
}

}  // namespace

// The engine's events for one request, handed from the engine thread to the HTTP thread. The sink
// also does the request's metrics when it finishes, so that a request whose client went away is
// still counted.
struct SinkEvent {
    bool finished = false;
    TokenEvent token;
    FinishEvent finish;
};

class EventQueueSink final : public RequestSink {
public:
    EventQueueSink(std::shared_ptr<Metrics> metrics, Clock::time_point received, double validation_s)
        : metrics_(std::move(metrics)), received_(received), validation_s_(validation_s) {}

    void on_token(const TokenEvent& event) override { push(SinkEvent{false, event, {}}); }
    void on_finish(const FinishEvent& event) override {
        const double total_s = std::chrono::duration<double>(Clock::now() - received_).count();
        metrics_->on_finished(event, validation_s_, total_s);
        push(SinkEvent{true, {}, event});
    }

    std::optional<SinkEvent> pop(std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
        SinkEvent e = std::move(events_.front());
        events_.pop_front();
        return e;
    }

private:
    void push(SinkEvent e) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            events_.push_back(std::move(e));
        }
        cv_.notify_one();
    }

    std::shared_ptr<Metrics> metrics_;
    Clock::time_point received_;
    double validation_s_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<SinkEvent> events_;
};

// Counts a request from its body's arrival until its answer is written (streams: until the stream
// ends), so that a graceful shutdown waits for answers, not only for the engine.
class OpenRequest {
public:
    explicit OpenRequest(std::shared_ptr<std::atomic<int64_t>> count) : count_(std::move(count)) { ++*count_; }
    ~OpenRequest() { --*count_; }
    OpenRequest(const OpenRequest&) = delete;
    OpenRequest& operator=(const OpenRequest&) = delete;

private:
    std::shared_ptr<std::atomic<int64_t>> count_;
};

// One SSE stream's progress, shared by its content provider and its releaser.
struct StreamState {
    std::shared_ptr<EventQueueSink> sink;
    std::shared_ptr<OpenRequest> open;
    RequestId id = 0;
    ParsedRequest parsed;
    std::optional<TokenEvent> held;
    std::string streamed;            // OpenAI: text sent so far (for text_offset)
    bool started = false;            // OpenAI: echo sent
    bool finished = false;
    Clock::time_point last_write = Clock::now();
};

namespace {

// One OpenAI text_completion chunk: a token's text (with its logprob when asked), the echoed
// prompt, or the finish with usage.
json openai_chunk(const StreamState& st, const std::string& completion_id, int64_t created, const std::string& text,
                  const TokenEvent* token, const FinishEvent* finish) {
    json choice = {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (st.parsed.openai_logprobs && token)
        choice["logprobs"] = {{"tokens", {token->text_delta}},
                              {"token_logprobs", {token->logprob}},
                              {"top_logprobs", nullptr},
                              {"text_offset", {static_cast<int64_t>(st.streamed.size())}}};
    json chunk = {{"id", completion_id}, {"object", "text_completion"}, {"created", created},
                  {"model", st.parsed.model}, {"choices", json::array({choice})}};
    if (finish) {
        chunk["choices"][0]["finish_reason"] = openai_finish_reason(finish->reason);
        chunk["choices"][0]["stop_reason"] = openai_stop_reason(*finish);
        const int64_t p = finish->usage.prompt_tokens, g = finish->usage.generated_tokens;
        chunk["usage"] = {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}};
    }
    return chunk;
}

// What a stream sends when its request finishes: an error event, OpenAI's last chunk and [DONE],
// or LoRAX's last token (held back until now) with generated_text and details.
std::string final_events(const StreamState& st, const FinishEvent& f, bool openai, const std::string& completion_id,
                         int64_t created) {
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) {
        const HttpError err = finish_error(f);
        return sse(error_body(err.what(), err.error_type()));
    }
    if (openai) {
        const std::string full = (st.parsed.echo ? st.parsed.inputs : std::string()) + f.text;
        return sse(openai_chunk(st, completion_id, created, unstreamed_tail(st.streamed, full), nullptr, &f)) +
               "data: [DONE]\n\n";
    }
    if (!st.held) {
        const HttpError err(500, "incomplete_generation", "the request finished without generating a token");
        return sse(error_body(err.what(), err.error_type()));
    }
    json details = nullptr;
    if (st.parsed.details)
        details = {{"finish_reason", lorax_finish_reason(f.reason)},
                   {"prompt_tokens", f.usage.prompt_tokens},
                   {"generated_tokens", f.usage.generated_tokens},
                   {"seed", st.parsed.seed ? json(*st.parsed.seed) : json(nullptr)}};
    const std::string text = (st.parsed.return_full_text ? st.parsed.inputs : std::string()) + f.text;
    return sse({{"token", token_json(*st.held)}, {"generated_text", text}, {"details", details}});
}

}  // namespace

Routes::Routes(LoraxServer& server)
    : engine_(server.engine_),
      model_(server.model_),
      tokenizer_(server.tokenizer_),
      options_(server.options_),
      info_(server.info_),
      metrics_(server.metrics_),
      stopping_(server.stopping_),
      open_requests_(server.open_requests_),
      draining_(server.draining_),
      completion_counter_(server.completion_counter_) {}

// Every route goes through here: overload, authentication, and errors in LoRAX's shape. A
// handler's failure is its request's answer; the server goes on.
void Routes::refuse_if_overloaded(Response& res) const {
    if (!refusing_this_connection()) return;
    metrics_->on_request_refused("overloaded");
    res.set_header("Connection", "close");
    throw HttpError(429, "overloaded",
                    "too many connections: this server serves " + std::to_string(options_.max_connections) +
                        " at once (--max-connections); retry later");
}

void Routes::check_token(const Request& req) const {
    if (options_.api_token.empty()) return;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) != 0 || !same_secret(auth.substr(prefix.size()), options_.api_token))
        throw HttpError(401, "authentication",
                        "missing or wrong API token: send the header 'Authorization: Bearer <token>'");
}

// POST routes check overload and the token themselves, after reading the body (checks_first false).
Routes::Handler Routes::guarded(Handler handler, bool needs_token, bool checks_first) const {
    return [this, handler, needs_token, checks_first](const Request& req, Response& res) {
        try {
            if (checks_first) {
                refuse_if_overloaded(res);
                if (needs_token) check_token(req);
            }
            handler(req, res);
        } catch (const HttpError& e) {
            send_error(res, e);
        } catch (const Error& e) {
            send_error(res, HttpError(422, "validation", e.what()));
        } catch (const std::exception& e) {
            send_error(res, HttpError(500, "internal", std::string("internal error: ") + e.what()));
        }
    };
}

// POST bodies are read here, bounded by --max-body-bytes also when no Content-Length is sent.
std::string Routes::read_body(const Request&, Response& res, const ContentReader& reader) const {
    std::string body;
    bool too_large = false;
    const size_t limit = static_cast<size_t>(options_.max_body_bytes);
    const bool ok = reader([&](const char* data, size_t n) {
        if (body.size() + n > limit) {
            too_large = true;
            return false;
        }
        body.append(data, n);
        return true;
    });
    if (too_large || res.status == 413) {
        res.set_header("Connection", "close");
        throw HttpError(413, "validation",
                        "the request body is larger than " + std::to_string(limit) + " bytes (--max-body-bytes)");
    }
    if (!ok) throw HttpError(400, "invalid_input", "the request body could not be read");
    return body;
}

httplib::Server::HandlerWithContentReader Routes::post_json(JsonHandler handler) const {
    return [this, handler](const Request& req, Response& res, const ContentReader& reader) {
        guarded(
            [&, handler](const Request& rq, Response& rs) {
                const auto received = Clock::now();
                metrics_->on_request_received();
                std::string text;
                try {
                    text = read_body(rq, rs, reader);
                } catch (const HttpError& e) {
                    metrics_->on_request_refused(e.status() == 413 ? "payload_too_large" : "bad_request");
                    throw;
                }
                refuse_if_overloaded(rs);
                check_token(rq);
                if (draining_) {
                    metrics_->on_request_refused("shutting_down");
                    throw HttpError(503, "unavailable", "the server is shutting down");
                }
                json body;
                try {
                    body = parse_json_object(text);
                } catch (const HttpError&) {
                    metrics_->on_request_refused("bad_request");
                    throw;
                }
                try {
                    ClientConnection client(rq);
                    handler(body, rs, received, std::make_shared<OpenRequest>(open_requests_), client);
                } catch (const HttpError& e) {
                    if (e.error_type() == "validation") metrics_->on_request_refused("validation");
                    throw;
                }
            },
            true, false)(req, res);
    };
}

// Submits and returns the sink, counting the time spent before the engine as validation.
std::pair<std::shared_ptr<EventQueueSink>, RequestId> Routes::submit(ParsedRequest& parsed, Clock::time_point received) const {
    const double validation_s = std::chrono::duration<double>(Clock::now() - received).count();
    auto sink = std::make_shared<EventQueueSink>(metrics_, received, validation_s);
    metrics_->on_submitted();
    const RequestId id = engine_.submit(parsed.request, sink);
    return std::make_pair(sink, id);
}

// Waits for a whole request (the non-streaming routes). A client that goes away meanwhile is
// noticed within kPollInterval: its request is cancelled in the engine (like a stream's), and
// the wait goes on until the engine confirms, so that the request is counted as cancelled.
FinishEvent Routes::collect(EventQueueSink& sink, RequestId id, std::vector<TokenEvent>& tokens,
                            ClientConnection& client) const {
    bool client_gone = false;
    for (;;) {
        if (*stopping_) {
            engine_.cancel(id);
            throw HttpError(503, "incomplete_generation", "the request was cancelled: the server is shutting down");
        }
        if (!client_gone && client.closed()) {
            client_gone = true;
            engine_.cancel(id);
            metrics_->on_client_disconnect();
        }
        auto e = sink.pop(kPollInterval);
        if (!e) continue;
        if (e->finished) {
            // Nobody reads this answer; the status is for httplib's log of the exchange only.
            if (client_gone) throw HttpError(499, "incomplete_generation", "the client closed the connection");
            return e->finish;
        }
        tokens.push_back(std::move(e->token));
    }
}

json Routes::lorax_details(const ParsedRequest& r, const FinishEvent& f, const std::vector<TokenEvent>& tokens) const {
    json prefill = json::array();
    if (r.decoder_input_details && model_.decoder_start_token_id) {
        const int64_t start = *model_.decoder_start_token_id;
        prefill.push_back({{"id", start},
                           {"text", tokenizer_ ? tokenizer_->decode({start}, false) : std::string()},
                           {"logprob", nullptr}});
    }
    json list = json::array();
    for (const auto& t : tokens) list.push_back(token_json(t));
    return json{{"finish_reason", lorax_finish_reason(f.reason)},
                {"prompt_tokens", f.usage.prompt_tokens},
                {"generated_tokens", f.usage.generated_tokens},
                {"skipped_tokens", 0},
                {"seed", r.seed ? json(*r.seed) : json(nullptr)},
                {"prefill", prefill},
                {"tokens", list}};
}

void Routes::timing_headers(Response& res, const ParsedRequest& r, const FinishEvent& f) const {
    res.set_header("x-model-id", model_.model_id);
    if (!r.adapter_label.empty()) res.set_header("x-adapter-id", r.adapter_label);
    res.set_header("x-prompt-tokens", std::to_string(f.usage.prompt_tokens));
    res.set_header("x-generated-tokens", std::to_string(f.usage.generated_tokens));
    res.set_header("x-queue-time", std::to_string(static_cast<int64_t>(f.usage.queue_ms)));
    res.set_header("x-inference-time", std::to_string(static_cast<int64_t>(f.usage.total_ms - f.usage.queue_ms)));
    res.set_header("x-time-to-first-token", std::to_string(static_cast<int64_t>(f.usage.time_to_first_token_ms)));
}

// LoRAX's SSE stream: one event per token, the last token's event carrying generated_text and
// details; the stream ends with an {error, error_type} event when the request fails. The
// provider holds back one token because the engine says a request finished after its last
// token. A client that goes away is noticed within kPollInterval and its request cancelled.
void Routes::stream_response(Response& res, std::shared_ptr<StreamState> st, bool openai,
                             std::string completion_id) const {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_header("x-model-id", model_.model_id);
    auto stopping = stopping_;
    auto metrics = metrics_;
    Engine* engine = &engine_;
    const auto created = static_cast<int64_t>(std::time(nullptr));
    res.set_chunked_content_provider(
        "text/event-stream",
        [st, stopping, metrics, engine, openai, completion_id, created](size_t, httplib::DataSink& out) {
            auto write = [&](const std::string& text) {
                st->last_write = Clock::now();
                return out.write(text.data(), text.size());
            };
            if (openai && !st->started) {
                st->started = true;
                if (st->parsed.echo) {
                    if (!write(sse(openai_chunk(*st, completion_id, created, st->parsed.inputs, nullptr, nullptr))))
                        return false;
                    st->streamed = st->parsed.inputs;
                }
            }
            std::optional<SinkEvent> e;
            while (!e) {
                if (*stopping) return false;
                if (!out.is_writable()) return false;   // the client left: the releaser cancels
                e = st->sink->pop(kPollInterval);
                if (!e && Clock::now() - st->last_write > kKeepAliveInterval && !write(":keep-alive\n\n")) return false;
            }
            if (!e->finished) {
                if (openai) {
                    const TokenEvent& t = e->token;
                    const bool ok = write(sse(openai_chunk(*st, completion_id, created, t.text_delta, &t, nullptr)));
                    st->streamed += t.text_delta;
                    return ok;
                }
                std::optional<TokenEvent> previous = std::move(st->held);
                st->held = std::move(e->token);
                if (!previous) return true;
                return write(sse({{"token", token_json(*previous)}, {"generated_text", nullptr}, {"details", nullptr}}));
            }
            st->finished = true;
            const bool ok = write(final_events(*st, e->finish, openai, completion_id, created));
            if (ok) out.done();
            return ok;
        },
        // Runs when the response is done with, however it ended: a stream that did not reach its
        // finish lost its client (or the server is stopping), and its request must not run on.
        [st, engine, metrics, stopping](bool) {
            if (st->finished) return;
            engine->cancel(st->id);
            if (!*stopping) metrics->on_client_disconnect();
        });
}

Routes::JsonHandler Routes::lorax_generate(std::optional<bool> stream_by_route, bool wrap_in_list) const {
    return [this, stream_by_route, wrap_in_list](const json& body, Response& res, Clock::time_point received, std::shared_ptr<OpenRequest> open,
               ClientConnection& client) {
        ParsedRequest parsed = parse_lorax_request(body, model_, stream_by_route);
        if (parsed.stream) {
            auto st = std::make_shared<StreamState>();
            st->open = std::move(open);
            st->parsed = parsed;
            std::tie(st->sink, st->id) = submit(st->parsed, received);
            stream_response(res, st, false, {});
            return;
        }
        auto [sink, id] = submit(parsed, received);
        std::vector<TokenEvent> tokens;
        const FinishEvent f = collect(*sink, id, tokens, client);
        if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) throw finish_error(f);
        json out = {{"generated_text", (parsed.return_full_text ? parsed.inputs : std::string()) + f.text}};
        if (parsed.details || parsed.decoder_input_details) out["details"] = lorax_details(parsed, f, tokens);
        timing_headers(res, parsed, f);
        send_json(res, 200, wrap_in_list ? json::array({out}) : out);
    };
}

void Routes::openai_completions(const json& body, Response& res, Clock::time_point received,
                                std::shared_ptr<OpenRequest> open, ClientConnection& client) const {
    ParsedRequest parsed = parse_openai_completion(body, model_);
    const std::string completion_id = "cmpl-" + std::to_string(++completion_counter_);
    if (parsed.stream) {
        auto st = std::make_shared<StreamState>();
        st->open = std::move(open);
        st->parsed = parsed;
        std::tie(st->sink, st->id) = submit(st->parsed, received);
        stream_response(res, st, true, completion_id);
        return;
    }
    auto [sink, id] = submit(parsed, received);
    std::vector<TokenEvent> tokens;
    const FinishEvent f = collect(*sink, id, tokens, client);
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled) throw finish_error(f);
    const std::string prefix = parsed.echo ? parsed.inputs : std::string();
    json logprobs = nullptr;
    if (parsed.openai_logprobs) {
        json texts = json::array(), lps = json::array(), offsets = json::array();
        int64_t offset = static_cast<int64_t>(prefix.size());
        for (const auto& t : tokens) {
            texts.push_back(t.text_delta);
            lps.push_back(t.logprob);
            offsets.push_back(offset);
            offset += static_cast<int64_t>(t.text_delta.size());
        }
        logprobs = {{"tokens", texts}, {"token_logprobs", lps}, {"top_logprobs", nullptr}, {"text_offset", offsets}};
    }
    const int64_t p = f.usage.prompt_tokens, g = f.usage.generated_tokens;
    send_json(res, 200,
              {{"id", completion_id},
               {"object", "text_completion"},
               {"created", static_cast<int64_t>(std::time(nullptr))},
               {"model", parsed.model},
               {"choices", json::array({{{"index", 0},
                                         {"text", prefix + f.text},
                                         {"logprobs", logprobs},
                                         {"finish_reason", openai_finish_reason(f.reason)},
                                         {"stop_reason", openai_stop_reason(f)}}})},
               {"usage", {{"prompt_tokens", p}, {"completion_tokens", g}, {"total_tokens", p + g}}}});
}

void Routes::install(httplib::Server& http) const {
    http.Post("/", post_json(lorax_generate(std::nullopt, true)));
    http.Post("/generate", post_json(lorax_generate(false, false)));
    http.Post("/generate_stream", post_json(lorax_generate(true, false)));
    http.Post("/v1/completions", post_json([this](const json& body, Response& res, Clock::time_point received,
                                                      std::shared_ptr<OpenRequest> open, ClientConnection& client) {
        openai_completions(body, res, received, std::move(open), client);
    }));

    http.Get("/health", guarded([this](const Request&, Response& res) {
                 if (draining_) throw HttpError(503, "healthcheck", "the server is shutting down");
                 res.status = 200;
             }, false));
    http.Get("/info", guarded([this](const Request&, Response& res) { send_json(res, 200, info_); }, true));
    http.Get("/metrics", guarded([this](const Request&, Response& res) {
                 res.status = 200;
                 res.set_content(metrics_->render(), "text/plain; version=0.0.4");
             }, true));
    http.Get("/v1/models", guarded([this](const Request&, Response& res) {
                 json data = json::array({{{"id", model_.model_id}, {"object", "model"}, {"owned_by", "lorascope"}}});
                 for (const auto& a : model_.adapters)
                     data.push_back({{"id", a}, {"object", "model"}, {"owned_by", "lorascope"}, {"parent", model_.model_id}});
                 send_json(res, 200, {{"object", "list"}, {"data", data}});
             }, true));

    // httplib's own answers (no such route, body over the limit, unparsable request line) in LoRAX's shape.
    http.set_error_handler([](const Request& req, Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 404)
            send_json(res, 404, error_body("no route " + req.method + " " + req.path, "not_found"));
        else if (res.status == 413)
            send_json(res, 413, error_body("the request body is larger than --max-body-bytes allows", "validation"));
        else
            send_json(res, res.status, error_body("bad request", "invalid_input"));
    });
}

}  // namespace lorascope::cli::serve
