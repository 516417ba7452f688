// serve's protocol, sessions and routes reached directly (app/serve_core, app/serve_http's
// Routes), with a scripted engine instead of a model and no socket: bounded JSON, parameters
// through the engine's one parser, budgets, one-line client errors, LoRAX's SSE framing, and
// the decisions taken from a request's head before any of its body is read.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "http_routes.h"
#include "lorascope/error.h"
#include "lorascope/tokenizer.h"
#include "scripted_engine.h"
#include "serve_protocol.h"
#include "serve_session.h"

using namespace lorascope;
using namespace lorascope::serve;
using nlohmann::json;
namespace http = boost::beast::http;

namespace {

const std::string kDemoT5 = std::string(LORASCOPE_TEST_DEMO_DIR) + "/t5";

ServedModel demo_model() { return test::scripted_served_model(64); }

// The HttpError `fn` throws: "status error_type: message", or "no error".
template <typename Fn>
std::string http_error(Fn&& fn) {
    try {
        fn();
    } catch (const HttpError& e) {
        return std::to_string(e.status()) + " " + e.error_type() + ": " + e.what();
    }
    return "no error";
}

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

RequestHead head(http::verb method, const std::string& target, const std::string& token = {},
                 const std::string& length = {}) {
    RequestHead h;
    h.method(method);
    h.target(target);
    h.version(11);
    if (!token.empty()) h.set(http::field::authorization, "Bearer " + token);
    if (!length.empty()) h.set(http::field::content_length, length);
    return h;
}

ServeOptions options_with(const std::string& token, int max_connections) {
    ServeOptions o;
    o.api_token = token;
    o.limits.max_connections = max_connections;
    o.limits.max_body_bytes = 1000;
    return o;
}

}  // namespace

class TestServeProtocol : public QObject {
    Q_OBJECT
    std::unique_ptr<Tokenizer> tokenizer_ = load_tokenizer(kDemoT5);

private Q_SLOTS:
    // Issue 26, input 1: parameters nested 500,000 deep in a 1 MB body are refused while parsing.
    void deep_bodies_are_refused_while_parsing() {
        const std::string deep = R"({"inputs": "x", "parameters": )" + std::string(500000, '[') +
                                 std::string(500000, ']') + "}";
        const std::string e = http_error([&] { parse_json_object(deep); });
        QVERIFY2(contains(e, "400 invalid_input") && contains(e, "nested deeper than 64"), e.c_str());
        QVERIFY(parse_json_object(R"({"inputs": "x", "parameters": {"stop": [["a"]]}})").is_object());
    }

    // Parameters go through the engine's parser: its ranges, types and bounds, under LoRAX's names.
    void lorax_parameters_through_the_one_parser_data() {
        QTest::addColumn<QString>("parameters");
        QTest::addColumn<QString>("expected");
        QTest::newRow("tiny temperature") << R"({"temperature": 1e-39})" << "temperature must be in [0.0001, 10000]";
        QTest::newRow("zero temperature") << R"({"temperature": 0})" << "`temperature` must be strictly positive";
        QTest::newRow("huge penalty") << R"({"repetition_penalty": 1e300})" << "repetition_penalty must be in";
        QTest::newRow("wrong type") << R"({"max_new_tokens": "ten"})" << "'max_new_tokens' must be an integer";
        QTest::newRow("ignore_eos_token type") << R"({"ignore_eos_token": 1})" << "`ignore_eos_token` must be true or false";
        QTest::newRow("single stop") << R"({"stop": "owl"})" << "`stop` must be a list of strings";
        QTest::newRow("stop bytes") << (R"({"stop": [")" + QString(200, 'x') + R"("]})") << "a stop sequence of 200 bytes";
        QTest::newRow("unknown adapter") << R"({"adapter_id": "nope"})" << "is not an adapter of this server";
        // An unknown key is quoted escaped and bounded: the HTTP fuzzer's multi-line error.
        QTest::newRow("unknown key") << R"({"max_new_token": 3})" << "unknown parameter `max_new_token` (known:";
        QTest::newRow("newline key") << R"({"max\nnew_tokens": 3})" << R"(unknown parameter `"max\nnew_tokens"` (known:)";
        QTest::newRow("long key") << (R"({")" + QString(5000, 'k') + R"(": 3})") << (QString(63, 'k') + "...` (known:");
        QTest::newRow("newline adapter") << R"({"adapter_id": "up\nper"})" << R"(`adapter_id` "up\nper" is not an adapter)";
        QTest::newRow("newline strategy") << R"({"merged_adapters": {"ids": ["upper"], "merge_strategy": "ti\nes"}})"
                                          << R"(merge_strategy "ti\nes" is not one of)";
        // Issue 32's fields, with LoRAX's rules.
        QTest::newRow("best_of greedy") << R"({"best_of": 2})" << "you must use sampling when `best_of` is > 1";
        QTest::newRow("best_of seed") << R"({"best_of": 2, "do_sample": true, "seed": 3})" << "`seed` must not be set";
        QTest::newRow("best_of many") << R"({"best_of": 17, "do_sample": true})" << "`best_of` must be at most 16";
        QTest::newRow("best_of stop") << R"({"best_of": 2, "do_sample": true, "stop": ["a"]})" << "stop sequences are not supported with best_of";
        QTest::newRow("alternatives many") << R"({"return_k_alternatives": 21})" << "at most 20";
        QTest::newRow("alternatives none") << R"({"return_k_alternatives": 0})" << "must be strictly positive";
        QTest::newRow("truncate zero") << R"({"truncate": 0})" << "`truncate` must be strictly positive";
        QTest::newRow("hub adapter") << R"({"adapter_source": "hub", "adapter_id": "a/b"})" << "never downloaded";
        QTest::newRow("odd source") << R"({"adapter_source": "ftp", "adapter_id": "a"})" << "must be one of hub, local";
        QTest::newRow("local nameless") << R"({"adapter_source": "local"})" << "needs `adapter_id`";
        QTest::newRow("merge and id") << R"({"adapter_id": "upper", "merged_adapters": {"ids": ["upper"]}})" << "at most one of";
        QTest::newRow("merge unknown") << R"({"merged_adapters": {"ids": ["upper", "nope"]}})" << "\"nope\" is not an adapter";
        QTest::newRow("merge strategy") << R"({"merged_adapters": {"ids": ["upper"], "merge_strategy": "cat"}})" << "merge_strategy";
        QTest::newRow("merge base") << R"({"merged_adapters": {"ids": ["demo-t5"]}})" << "the base model has no adapter factors";
        // PEFT's add_weighted_adapter refuses unequal ranks for every strategy: 422 now, not 424 later.
        QTest::newRow("merge ranks") << R"({"merged_adapters": {"ids": ["upper", "sort"], "merge_strategy": "ties"}})"
                                     << "merged_adapters: every adapter of a merge must have the same r (as PEFT's "
                                        "add_weighted_adapter requires): 'upper' has r 4, 'sort' r 16";
    }

    void lorax_inspection_fields_map_onto_the_engine() {
        const ServedModel model = demo_model();
        const json p = {{"return_k_alternatives", 4}, {"truncate", 3}, {"best_of", 3}, {"do_sample", true},
                        {"merged_adapters", {{"ids", {"upper"}}, {"weights", {0.5}}, {"density", 0.7}}}};
        const ParsedRequest r = parse_lorax_request({{"inputs", "sort: b a"}, {"parameters", p}}, model, false);
        QCOMPARE(*r.request.params.top_alternatives, int64_t(4));
        QCOMPARE(*r.request.params.truncate, int64_t(3));
        QCOMPARE(*r.request.params.best_of, int64_t(3));
        QVERIFY(r.seed.has_value());   // drawn by the server, reported in details
        QVERIFY(r.request.merge && r.request.merge->ids == std::vector<std::string>{"upper"});
        QVERIFY(r.request.adapter.empty());
        // Streams refuse what LoRAX and TGI do not stream.
        std::string e = http_error([&] { parse_lorax_request({{"inputs", "x"}, {"parameters", p}}, model, true); });
        QVERIFY2(contains(e, "422 validation") && contains(e, "not supported when `stream` == True"), e.c_str());
        e = http_error([&] {
            parse_lorax_request({{"inputs", "x"}, {"parameters", {{"decoder_input_details", true}}}}, model, true);
        });
        QVERIFY2(contains(e, "not supported when streaming tokens"), e.c_str());
        // A local adapter is named here and loaded later, only under --adapter-dir.
        const ParsedRequest local = parse_lorax_request(
            {{"inputs", "x"}, {"parameters", {{"adapter_source", "local"}, {"adapter_id", "a/b"}}}}, model, false);
        QCOMPARE(local.local_adapter.value_or(""), std::string("a/b"));
        test::ScriptedEngine engine;
        e = http_error([&] { load_local_adapter_for("a/b", nullptr, engine); });
        QVERIFY2(contains(e, "422 validation") && contains(e, "--adapter-dir"), e.c_str());
        const AdapterDirectory dir(kDemoT5);
        const std::vector<std::string> outside_paths = {"../bart/adapters/upper", "/etc", kDemoT5 + "/../bart"};
        for (const std::string& outside : outside_paths) {
            e = http_error([&] { load_local_adapter_for(outside, &dir, engine); });
            QVERIFY2(contains(e, "422 validation") && !contains(e, kDemoT5), e.c_str());
        }
    }
    void lorax_parameters_through_the_one_parser() {
        QFETCH(QString, parameters);
        QFETCH(QString, expected);
        const json body = {{"inputs", "sort: b a"}, {"parameters", json::parse(parameters.toStdString())}};
        const std::string e = http_error([&] { parse_lorax_request(body, demo_model(), false); });
        QVERIFY2(contains(e, "422 validation") && contains(e, expected.toStdString()), e.c_str());
        QVERIFY2(e.find('\n') == std::string::npos && e.size() < 2000, e.c_str());
    }

    // Issue 26, input 2: max_new_tokens 2^63-1 is answered 422 before the engine sees it.
    void budgets_are_checked_before_submit() {
        ServedModel model = demo_model();
        ParsedRequest r = parse_lorax_request(
            {{"inputs", "sort: b a"}, {"parameters", {{"max_new_tokens", INT64_MAX}}}}, model, false);
        std::string e = http_error([&] { fit_to_budget(r, model, tokenizer_.get()); });
        QVERIFY2(contains(e, "422 validation") && contains(e, "max_batch_tokens (64)"), e.c_str());
        ParsedRequest ok = parse_lorax_request({{"inputs", "sort: b a"}, {"parameters", {{"max_new_tokens", 8}}}}, model, false);
        fit_to_budget(ok, model, tokenizer_.get());
        QCOMPARE(ok.request.input_ids, tokenizer_->encode("sort: b a", true));
        QVERIFY(!ok.request.prompt);   // the engine gets the ids: the prompt is tokenized once
        e = http_error([&] { fit_to_budget(ok, model, nullptr); });
        QVERIFY2(contains(e, "no tokenizer"), e.c_str());
        ParsedRequest openai = parse_openai_completion({{"model", ""}, {"prompt", "x"}, {"max_tokens", INT64_MAX}}, model);
        e = http_error([&] { fit_to_budget(openai, model, tokenizer_.get()); });
        QVERIFY2(contains(e, "max_batch_tokens"), e.c_str());
        e = http_error([&] { parse_openai_completion({{"model", ""}, {"prompt", "x"}, {"temperature", 1e-39}}, model); });
        QVERIFY2(contains(e, "temperature must be in [0.0001, 10000]"), e.c_str());
    }

    // Issue 26, input 3: a client never sees a backtrace or a server path, only one line.
    void client_errors_are_one_line_without_paths() {
        const std::string engine_error =
            "choosing the next token failed: /srv/models/x/adapter_config.json: probability tensor contains `nan`\n"
            "Exception raised from multinomial at /build/aten/src/ATen/native/Distributions.cpp:123\nframe #0: ...";
        const std::string text = client_error_text(engine_error);
        QCOMPARE(text, std::string("choosing the next token failed: <path>: probability tensor contains `nan`"));
        QVERIFY(client_error_text(std::string(1000, 'x')).size() <= 303);
        QCOMPARE(client_error_text("in (/a/b) and '/c/d' or 1/2"), std::string("in (<path>) and '<path>' or 1/2"));
    }

    // LoRAX's framing: one `data:{json}\n\n` event per token, the last one carrying the text.
    void streams_keep_lorax_framing() {
        test::ScriptedEngine engine;
        ServeContext context(engine, demo_model(), tokenizer_.get(), ServeOptions{}, json::object());
        ParsedRequest r = parse_lorax_request({{"inputs", "sort: b a"}, {"parameters", {{"max_new_tokens", 3}, {"details", true}}}},
                                              context.model, true);
        fit_to_budget(r, context.model, tokenizer_.get());
        const auto ids = r.request.input_ids;
        Generation g(context, std::move(r), Dialect::Lorax, false, Clock::now());
        int notified = 0;
        g.start([&] { ++notified; });
        QCOMPARE(notified, 1);   // once for the events that waited, not once per event
        const Generation::Progress p = g.advance();
        QVERIFY(p.finished);
        QVERIFY(!p.reply);
        std::vector<std::string> events;
        for (size_t at = 0; at < p.events.size();) {
            const size_t end = p.events.find("\n\n", at);
            QVERIFY(end != std::string::npos);
            events.push_back(p.events.substr(at, end - at));
            at = end + 2;
        }
        QCOMPARE(events.size(), size_t(3));
        for (size_t i = 0; i < 3; ++i) {
            QVERIFY2(events[i].rfind("data:{", 0) == 0, events[i].c_str());
            const json e = json::parse(events[i].substr(5));
            QCOMPARE(e.at("token").at("id").get<int64_t>(), ids[i]);
            QCOMPARE(e.at("generated_text").is_null(), i < 2);
        }
        const json last = json::parse(events[2].substr(5));
        QCOMPARE(last.at("generated_text").get<std::string>(),
                 " t" + std::to_string(ids[0]) + " t" + std::to_string(ids[1]) + " t" + std::to_string(ids[2]));
        QCOMPARE(last.at("details").at("generated_tokens").get<int64_t>(), int64_t(3));
        QCOMPARE(std::string(kSseKeepAlive), std::string(":keep-alive\n\n"));
    }

    // A failed request's whole answer: 424 in LoRAX's shape, one line; the log keeps the detail.
    void a_failed_generation_is_a_one_line_424() {
        test::ScriptedEngine engine([](RequestId id, const Request&, RequestSink& sink) {
            FinishEvent f;
            f.id = id;
            f.reason = FinishReason::Error;
            f.error = "choosing the next token failed: /srv/m/x.json: bad\nException raised from /src/a.cpp";
            sink.on_finish(f);
        });
        ServeContext context(engine, demo_model(), tokenizer_.get(), ServeOptions{}, json::object());
        ParsedRequest r = parse_lorax_request({{"inputs", "sort: b a"}}, context.model, false);
        fit_to_budget(r, context.model, tokenizer_.get());
        Generation g(context, std::move(r), Dialect::Lorax, false, Clock::now());
        g.start([] {});
        const auto p = g.advance();
        QVERIFY(p.reply);
        QCOMPARE(p.reply->status, 424);
        const json body = json::parse(p.reply->body);
        QCOMPARE(body.at("error_type").get<std::string>(), std::string("generation"));
        QCOMPARE(body.at("error").get<std::string>(), std::string("generation failed: choosing the next token failed: <path>: bad"));
    }

    // A generation destroyed before its finish (its client left) is cancelled in the engine.
    void an_abandoned_generation_is_cancelled() {
        test::ScriptedEngine engine([](RequestId, const Request&, RequestSink&) {});   // never finishes
        ServeContext context(engine, demo_model(), tokenizer_.get(), ServeOptions{}, json::object());
        ParsedRequest r = parse_lorax_request({{"inputs", "sort: b a"}}, context.model, false);
        fit_to_budget(r, context.model, tokenizer_.get());
        {
            Generation g(context, std::move(r), Dialect::Lorax, false, Clock::now());
            g.start([] {});
            QCOMPARE(context.open_requests.load(), int64_t(1));
        }
        QCOMPARE(engine.cancelled().size(), size_t(1));
        QCOMPARE(context.open_requests.load(), int64_t(0));
    }

    // Decided from the head alone: the body of a refused request is never read.
    void heads_are_decided_before_any_body() {
        test::ScriptedEngine engine;
        ServeContext context(engine, demo_model(), tokenizer_.get(), options_with("s3cret", 1), json::object());
        const Routes routes(context);
        auto status = [](const HeadDecision& d) { return d.reply ? d.reply->status : 0; };
        QCOMPARE(status(routes.on_head(head(http::verb::post, "/generate"))), 401);
        QCOMPARE(status(routes.on_head(head(http::verb::post, "/generate", "wrong"))), 401);
        QCOMPARE(status(routes.on_head(head(http::verb::get, "/health"))), 200);   // no token needed
        QCOMPARE(status(routes.on_head(head(http::verb::get, "/metrics"))), 401);
        QCOMPARE(status(routes.on_head(head(http::verb::post, "/generate", "s3cret", "1001"))), 413);
        QCOMPARE(status(routes.on_head(head(http::verb::post, "/generate", "s3cret", "99999999999999999999999"))), 413);
        QCOMPARE(status(routes.on_head(head(http::verb::delete_, "/generate", "s3cret"))), 404);
        const HeadDecision first = routes.on_head(head(http::verb::post, "/generate?x=1", "s3cret", "10"));
        QCOMPARE(first.route, Route::Generate);
        QVERIFY(!first.reply);
        QCOMPARE(first.body_bytes, int64_t(10));
        RequestHead chunked = head(http::verb::post, "/generate", "s3cret");
        chunked.set(http::field::transfer_encoding, "chunked");
        QCOMPARE(routes.on_head(chunked).body_bytes, int64_t(1000));   // unknown: the limit is reserved
        // Slots go to requests whose body is in: --max-connections 1.
        std::optional<Reply> refused;
        const ServingSlot slot = routes.take_slot(refused);
        QVERIFY(slot && !refused);
        const ServingSlot none = routes.take_slot(refused);
        QVERIFY(!none && refused && refused->status == 429 && refused->close);
        RequestHead crowded = head(http::verb::get, "/health");
        for (int i = 0; i < 101; ++i) crowded.insert("x-h" + std::to_string(i), "v");
        QCOMPARE(status(routes.on_head(crowded)), 431);
        context.draining = true;
        QCOMPARE(status(routes.on_head(head(http::verb::get, "/health"))), 503);
        QCOMPARE(status(routes.on_head(head(http::verb::post, "/generate", "s3cret", "10"))), 503);
    }
};

QTEST_APPLESS_MAIN(TestServeProtocol)
#include "test_serve_protocol.moc"
