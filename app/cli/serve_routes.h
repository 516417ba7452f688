// The routes of `lorascope-cli serve`: LoRAX's POST /, /generate and /generate_stream, OpenAI's
// /v1/completions, and GET /health, /info, /metrics and /v1/models, each behind the same checks
// (overload, API token) and answering errors in LoRAX's shape. One Routes object lives as long as
// its LoraxServer and reads the server's state through references.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lorascope/engine.h"
#include "lorascope/tokenizer.h"
#include "serve_metrics.h"
#include "serve_protocol.h"

namespace lorascope::cli::serve {

class LoraxServer;
struct ServeOptions;
class ClientConnection;
class EventQueueSink;   // one request's engine events, handed to its HTTP thread
class OpenRequest;      // counts a request until its answer is written
struct StreamState;     // one SSE stream's progress

using Clock = std::chrono::steady_clock;

class Routes {
public:
    explicit Routes(LoraxServer& server);
    void install(httplib::Server& http) const;

private:
    using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
    // A POST route's work once its body is read and parsed.
    using JsonHandler = std::function<void(const nlohmann::json& body, httplib::Response&, Clock::time_point received,
                                           std::shared_ptr<OpenRequest>, ClientConnection&)>;

    void refuse_if_overloaded(httplib::Response& res) const;
    void check_token(const httplib::Request& req) const;
    Handler guarded(Handler handler, bool needs_token, bool checks_first = true) const;
    std::string read_body(const httplib::Request&, httplib::Response& res, const httplib::ContentReader& reader) const;
    httplib::Server::HandlerWithContentReader post_json(JsonHandler handler) const;

    std::pair<std::shared_ptr<EventQueueSink>, RequestId> submit(ParsedRequest& parsed, Clock::time_point received) const;
    FinishEvent collect(EventQueueSink& sink, RequestId id, std::vector<TokenEvent>& tokens,
                        ClientConnection& client) const;
    nlohmann::json lorax_details(const ParsedRequest& r, const FinishEvent& f, const std::vector<TokenEvent>& tokens) const;
    void timing_headers(httplib::Response& res, const ParsedRequest& r, const FinishEvent& f) const;
    void stream_response(httplib::Response& res, std::shared_ptr<StreamState> st, bool openai,
                         std::string completion_id) const;

    JsonHandler lorax_generate(std::optional<bool> stream_by_route, bool wrap_in_list) const;
    void openai_completions(const nlohmann::json& body, httplib::Response& res, Clock::time_point received,
                            std::shared_ptr<OpenRequest> open, ClientConnection& client) const;

    Engine& engine_;
    const ServedModel& model_;
    const Tokenizer* tokenizer_;
    const ServeOptions& options_;
    const nlohmann::json& info_;
    std::shared_ptr<Metrics> metrics_;
    std::shared_ptr<std::atomic<bool>> stopping_;
    std::shared_ptr<std::atomic<int64_t>> open_requests_;
    std::atomic<bool>& draining_;
    std::atomic<uint64_t>& completion_counter_;
};

}  // namespace lorascope::cli::serve
