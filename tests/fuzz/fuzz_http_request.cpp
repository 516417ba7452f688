// `lorascope-cli serve`'s request path on raw bytes: the same Beast parser under the server's
// limits (bound_parser), the same Routes (head, then body), the same sessions, over a scripted
// engine that answers inside submit. Pipelined requests are followed one after another. Checks
// that every answer is HTTP a client can read: a status in 200..599, JSON bodies that parse, errors
// in LoRAX's exact shape with one-line messages, SSE events framed `data:...\n\n`.
#include <boost/asio/buffer.hpp>

#include "fuzz_support.h"
#include "http_connection.h"
#include "http_routes.h"
#include "lorascope/tokenizer.h"
#include "scripted_engine.h"
#include "serve_session.h"

using namespace lorascope;
using namespace lorascope::serve;
namespace http = boost::beast::http;

namespace {

ServeOptions fuzz_options() {
    ServeOptions o;
    o.api_token = "tok";
    o.limits.max_connections = 2;
    o.limits.max_body_bytes = 4096;
    o.limits.max_header_bytes = 2048;
    o.limits.max_header_fields = 16;
    return o;
}

struct World {
    std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(LORASCOPE_FUZZ_SOURCE_DIR "/resources/demo/t5");
    test::ScriptedEngine engine{{}, /*record=*/false};
    ServeContext context{engine, test::scripted_served_model(256), tokenizer.get(), fuzz_options(), nlohmann::json::object()};
    Routes routes{context};
};

[[noreturn]] void finding(const std::string& what) {
    std::fprintf(stderr, "finding: %s\n", what.c_str());
    std::abort();
}

void check_reply(const Reply& r) {
    if (r.status < 200 || r.status > 599) finding("status " + std::to_string(r.status));
    if (r.content_type != "application/json" || r.body.empty()) return;
    const auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (body.is_discarded()) finding("a JSON reply that does not parse: " + r.body);
    if (r.status < 400) return;
    if (!body.is_object() || body.size() != 2 || !body.contains("error") || !body.contains("error_type"))
        finding("an error not in LoRAX's shape: " + r.body);
    if (body["error"].get<std::string>().find('\n') != std::string::npos) finding("a multi-line error: " + r.body);
}

void check_events(const std::string& events) {
    for (size_t at = 0; at < events.size();) {
        const size_t end = events.find("\n\n", at);
        if (events.compare(at, 5, "data:") != 0 || end == std::string::npos) finding("SSE framing: " + events);
        at = end + 2;
    }
}

// One request from `bytes`: how many bytes it took, 0 when they end before it does.
size_t one_request(World& world, std::string_view bytes) {
    RequestParser parser;
    bound_parser(parser, world.context.options.limits);
    parser.eager(true);
    size_t used = 0;
    std::optional<HeadDecision> head;
    while (!parser.is_done()) {
        boost::beast::error_code ec;
        const size_t n = parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
        used += n;
        if (ec == http::error::need_more) return 0;
        if (ec) {
            check_reply(world.routes.refusal(ec == http::error::header_limit ? 431 : ec == http::error::body_limit ? 413 : 400));
            return 0;
        }
        if (parser.is_header_done() && !head) {
            head = world.routes.on_head(parser.get().base());
            if (head->reply) {
                check_reply(*head->reply);
                return 0;   // the server closes: the body is not read
            }
        }
        if (n == 0 && !parser.is_done()) return 0;
    }
    std::optional<Reply> refused;
    const ServingSlot slot = world.routes.take_slot(refused);
    if (refused) {
        check_reply(*refused);
        return used;
    }
    BodyOutcome outcome = world.routes.on_body(head->route, parser.get().body(), Clock::now(), [] {});
    if (outcome.reply) check_reply(*outcome.reply);
    if (outcome.generation) {
        const auto p = outcome.generation->run_to_end(std::chrono::milliseconds(1000));
        if (!p.finished) finding("a generation that did not finish");
        if (p.reply) check_reply(*p.reply);
        check_events(p.events);
    }
    return used;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static World* world = new World();   // one tokenizer load; never destroyed (libFuzzer exits)
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    for (int request = 0; request < 8 && !bytes.empty(); ++request) {
        const size_t used = one_request(*world, bytes);
        if (used == 0) break;
        bytes.remove_prefix(used);
    }
    return 0;
}
