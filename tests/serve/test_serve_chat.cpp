// `lorascope-cli serve`'s chat routes on a tiny BLOOM whose tokenizer_config.json carries a chat
// template (tests/oracle/chat_engine_oracle.py), driven by OpenAI's own Python client (openai from
// PyPI, tests/serve/chat_client.py): /v1/chat/completions whole and streamed, and LoRAX's chat
// form (/generate with apply_chat_template), each give the text, token ids and logprobs that
// `lorascope-cli generate` gives for the same "messages" line. A template's refusal is a 422 with
// the template's message; a model without a template a 400 saying so; the server serves on.
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

#include "serve_process.h"
#include "test_env.h"

using nlohmann::json;
using lorascope::test::PyResult;
using lorascope::test::q;
using lorascope::test::Server;

namespace {

std::string model_dir(const char* which) { return lorascope::test::oracle_dir() + "/chat_engine/" + which; }

PyResult run_client(const QStringList& args) {
    return lorascope::test::run_python(lorascope::test::env_path("LORASCOPE_CHAT_CLIENT"), args);
}

// The conversations, each asked of the base model by "" and by the served model's id.
json chat_cases() {
    const json turns = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                    {{"role", "user"}, {"content", "The quick brown fox"}},
                                    {{"role", "assistant"}, {"content", "jumps over the lazy dog."}},
                                    {{"role", "user"}, {"content", "  And then?  "}}});
    return json::array({
        {{"id", "single_user"}, {"model", ""}, {"messages", {{{"role", "user"}, {"content", "Hello world"}}}},
         {"max_tokens", 8}, {"repetition_penalty", 2.0}},
        {{"id", "system_and_turns"}, {"model", "model"}, {"messages", turns}, {"max_tokens", 8},
         {"repetition_penalty", 2.0}},
        {{"id", "text_parts"}, {"model", ""},
         {"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Hello world"}}}}}}},
         {"max_tokens", 5}, {"repetition_penalty", 1.0}},
    });
}

// `lorascope-cli generate`'s line for a case: greedy, every other knob as serve sets it.
json generate_line(const json& c) {
    json messages = c.at("messages");
    for (auto& m : messages)   // the client's text parts, as the server joins them
        if (m.at("content").is_array()) m["content"] = m["content"][0]["text"];
    return {{"id", c.at("id")}, {"messages", messages},
            {"params", {{"max_new_tokens", c.at("max_tokens")}, {"repetition_penalty", c.at("repetition_penalty")},
                        {"do_sample", false}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0},
                        {"typical_p", 1.0}, {"logprobs", true}}}};
}

}  // namespace

class TestServeChat : public QObject {
    Q_OBJECT
    Server server_;

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(lorascope::test::exists(model_dir("model") + "/tokenizer_config.json"),
                 "no chat_engine model: run the oracle_chat_engine step");
        const PyResult r = run_client({"--version-check"});
        QVERIFY2(r.exit_code == 0, ("openai is missing from the oracle venv (scripts/setup-oracle installs it): " +
                                    r.err).c_str());
        QVERIFY2(server_.start({}, {"--model", q(model_dir("model"))}),
                 ("the server did not start: " + server_.process.readAllStandardError().toStdString()).c_str());
        QCOMPARE(server_.hello.at("model_id").get<std::string>(), std::string("model"));
    }

    void openai_client_matches_generate() {
        const json cases = chat_cases();
        std::vector<json> lines;
        for (const auto& c : cases) lines.push_back(generate_line(c));
        const auto expected = lorascope::test::run_generate(lines, {"--model", q(model_dir("model"))});
        QCOMPARE(expected.size(), cases.size());

        QTemporaryDir dir;
        QFile f(dir.filePath("cases.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(cases.dump().c_str());
        f.close();
        const PyResult r = run_client({q(server_.url), "parity", f.fileName()});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());

        std::map<std::string, int> modes;
        for (const auto& got : lorascope::test::json_lines(r.out)) {
            const std::string id = got.at("case"), mode = got.at("mode"), where = id + "/" + mode + ": " + got.dump();
            const json& want = expected.at(id);
            ++modes[mode];
            QVERIFY2(got.at("text") == want.at("text"), where.c_str());
            QVERIFY2(got.at("token_ids") == want.at("token_ids"), where.c_str());
            QCOMPARE(got.at("prompt_tokens").get<int64_t>(), want.at("prompt_tokens").get<int64_t>());
            QCOMPARE(got.at("completion_tokens").get<int64_t>(), want.at("generated_tokens").get<int64_t>());
            const std::string reason = want.at("finish_reason");
            const std::string want_reason = mode == "lorax_chat" ? (reason == "eos" ? "eos_token" : reason)
                                                                 : (reason == "length" ? "length" : "stop");
            QVERIFY2(got.at("finish_reason") == want_reason, where.c_str());
            const auto lps = want.at("logprobs").get<std::vector<double>>();
            QCOMPARE(got.at("logprobs").size(), lps.size());
            for (size_t i = 0; i < lps.size(); ++i)
                QVERIFY2(std::fabs(got["logprobs"][i].get<double>() - lps[i]) <= 1e-4 * std::max(1.0, std::fabs(lps[i])),
                         where.c_str());
            // A stream: the role chunk, one chunk per token, the last one.
            if (mode == "chat_stream") QCOMPARE(got.at("chunks").get<size_t>(), want.at("token_ids").size() + 2);
        }
        for (const char* mode : {"chat", "chat_stream", "lorax_chat"}) QCOMPARE(modes[mode], int(cases.size()));
        // The conversations were different prompts (the template ran), not one text.
        QVERIFY(expected.at("single_user").at("prompt_tokens") != expected.at("system_and_turns").at("prompt_tokens"));
    }

    void refusals_are_4xx_naming_the_problem() {
        const PyResult r = run_client({q(server_.url), "errors"});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        const auto lines = lorascope::test::json_lines(r.out);
        QCOMPARE(lines.size(), size_t(1));
        const json& e = lines[0];
        auto has = [&](const char* key, int status, const std::string& text) {
            const json& got = e.at(key);
            const std::string where = std::string(key) + ": " + got.dump();
            QVERIFY2(got.at("status") == status, where.c_str());
            QVERIFY2(got.at("error").get<std::string>().find(text) != std::string::npos, where.c_str());
        };
        // The template's own raise_exception message (chat_engine_oracle.py's REFUSAL), before a stream.
        has("refusal", 422, "chat template refused the conversation: Unknown role: developer");
        has("refusal_stream", 422, "Unknown role: developer");
        has("no_messages", 422, "`messages` is required");
        has("no_content", 422, "needs \"content\"");
        has("image_part", 422, "text parts");
        has("unknown_adapter", 422, "\"nope\" is not an adapter");
        has("top_logprobs", 422, "`top_logprobs` must be in [0, 20]");
        has("unknown_field", 422, "unknown field `prompt`");
        has("lorax_not_messages", 422, "`inputs` must be the messages as a JSON list");
        QCOMPARE(e.at("after").get<std::string>(), std::string("length"));
    }

    void a_model_without_a_template_says_so() {
        Server plain;
        QVERIFY(plain.start({}, {"--model", q(model_dir("plain"))}));
        const PyResult r = run_client({q(plain.url), "no-template"});
        QVERIFY2(r.exit_code == 0, (r.err + r.out).c_str());
        const auto lines = lorascope::test::json_lines(r.out);
        QCOMPARE(lines.size(), size_t(1));
        QCOMPARE(lines[0].at("status").get<int>(), 400);
        QVERIFY2(lines[0].at("error").get<std::string>().find("has no chat template") != std::string::npos,
                 lines[0].dump().c_str());
        QCOMPARE(plain.stop(), 0);
    }

    void cleanupTestCase() { QCOMPARE(server_.stop(), 0); }
};

QTEST_GUILESS_MAIN(TestServeChat)
#include "test_serve_chat.moc"
