// The window's remote backend sending conversations (ui/remote/remote_chat.*) to a real
// `lorascope-cli serve` on the oracle's tiny templated BLOOM: in both dialects a Request carrying a
// conversation streams from /v1/chat/completions with the text and logprobs that `lorascope-cli
// generate` gives for the same "messages" line, and the server's template refusal is that
// request's error, quoted.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

#include "lorascope/chat.h"
#include "remote/remote_backend.h"
#include "serve_process.h"
#include "test_env.h"
#include "wait_sink.h"

using nlohmann::json;
using namespace lorascope;
using lorascope::ui::RemoteDialect;
using test::WaitSink;

namespace {

std::string model_dir() { return lorascope::test::oracle_dir() + "/chat_engine/model"; }

const json kTurns = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                 {{"role", "user"}, {"content", "The quick brown fox"}},
                                 {{"role", "assistant"}, {"content", "jumps over the lazy dog."}},
                                 {{"role", "user"}, {"content", "  And then?  "}}});

Request chat_request(const json& messages) {
    Request r;
    r.conversation = parse_conversation_json(messages.dump(), "", "test");
    r.params.max_new_tokens = 8;
    r.params.do_sample = false;
    r.params.repetition_penalty = 2.0;
    return r;
}

json generate_line(const std::string& id, const json& messages) {
    return {{"id", id}, {"messages", messages},
            {"params", {{"max_new_tokens", 8}, {"repetition_penalty", 2.0}, {"do_sample", false}, {"temperature", 1.0},
                        {"top_k", 0}, {"top_p", 1.0}, {"typical_p", 1.0}, {"logprobs", true}}}};
}

}  // namespace

class TestRemoteChat : public QObject {
    Q_OBJECT
    test::Server server_;

    void conversations_match_generate(RemoteDialect dialect) {
        ui::RemoteEndpoint endpoint;
        endpoint.url = QUrl(test::q(server_.url));
        endpoint.dialect = dialect;
        auto engine = ui::createRemoteEngine(endpoint);
        const json single = json::array({{{"role", "user"}, {"content", "Hello world"}}});
        auto a = std::make_shared<WaitSink>(), b = std::make_shared<WaitSink>();
        engine->submit(chat_request(single), a);
        engine->submit(chat_request(kTurns), b);
        const auto expected = lorascope::test::run_generate({generate_line("single", single), generate_line("turns", kTurns)},
                                                            {"--model", test::q(model_dir())});
        QCOMPARE(expected.size(), size_t(2));
        for (const auto& [id, sink] : {std::pair{"single", a}, std::pair{"turns", b}}) {
            QVERIFY(sink->wait(120000));
            const FinishEvent& f = sink->finish;
            const json& want = expected.at(id);
            QVERIFY2(f.reason == FinishReason::Length, f.error.c_str());
            QCOMPARE(f.text, want.at("text").get<std::string>());
            QCOMPARE(sink->streamed(), f.text);
            QCOMPARE(f.usage.prompt_tokens, want.at("prompt_tokens").get<int64_t>());
            const auto lps = want.at("logprobs").get<std::vector<double>>();
            QCOMPARE(f.logprobs.size(), lps.size());
            for (size_t k = 0; k < lps.size(); ++k) QVERIFY(std::fabs(f.logprobs[k] - lps[k]) < 1e-4);
        }
        // The template's refusal, quoted as this request's error.
        auto refused = std::make_shared<WaitSink>();
        engine->submit(chat_request(json::array({{{"role", "developer"}, {"content", "x"}}})), refused);
        QVERIFY(refused->wait(60000));
        QVERIFY(refused->finish.reason == FinishReason::Error);
        QVERIFY2(refused->finish.error.find("Unknown role: developer") != std::string::npos, refused->finish.error.c_str());
        QVERIFY2(refused->finish.error.find("HTTP 422") != std::string::npos, refused->finish.error.c_str());
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(lorascope::test::exists(model_dir() + "/tokenizer_config.json"),
                 "no chat_engine model: run the oracle_chat_engine step");
        QVERIFY(server_.start({}, {"--model", test::q(model_dir())}));
    }
    void lorax_dialect() { conversations_match_generate(RemoteDialect::Lorax); }
    void openai_dialect() { conversations_match_generate(RemoteDialect::OpenAi); }
    void cleanupTestCase() { QCOMPARE(server_.stop(), 0); }
};

QTEST_GUILESS_MAIN(TestRemoteChat)
#include "test_remote_chat.moc"
