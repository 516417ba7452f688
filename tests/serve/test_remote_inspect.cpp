// What the model weighed (issue 32) through the window's remote backend (ui/remote/*) against
// `lorascope-cli serve` on the demo pack's BLOOM (its plus-one and reverse adapters share a rank, so
// they merge): alternatives (LoRAX's return_k_alternatives, streamed with each token), prompt
// log-probabilities (decoder_input_details, which LoRAX answers unstreamed: the request goes to
// /generate) and merges (merged_adapters) come back equal to `lorascope-cli generate` with the same
// request. The OpenAI dialect asks for alternatives too (/v1/completions' `logprobs: k`, read back
// from top_logprobs) and names what it cannot send instead of dropping it.
#include <QSignalSpy>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>

#include "cli_process.h"
#include "lorascope/engine.h"
#include "remote/remote_backend.h"
#include "requests/alternatives_popup.h"
#include "serve_process.h"
#include "test_env.h"
#include "wait_sink.h"

using nlohmann::json;
using namespace lorascope;
using lorascope::test::q;
using lorascope::test::Server;
using lorascope::test::WaitSink;
using lorascope::ui::RemoteDialect;
using lorascope::ui::RemoteEndpoint;

namespace {

const QStringList kBloom = {"--demo", "--demo-model", "bloom"};
constexpr int64_t kNew = 8;

RemoteEndpoint endpoint(const std::string& url, RemoteDialect dialect) {
    RemoteEndpoint e;
    e.url = QUrl(q(url));
    e.dialect = dialect;
    return e;
}

AdapterMerge blend() {
    AdapterMerge m;
    m.ids = {"plus-one", "reverse"};
    m.weights = {1.0, 1.0};
    m.strategy = MergeStrategy::DareLinear;
    m.density = 0.7;
    m.seed = 9;   // DARE's pruning: sent, as lorascope serve takes it
    return m;
}

// The remote request and the `lorascope-cli generate` line it amounts to (LoRAX's greedy defaults).
struct Case {
    std::string id;
    Request request;
    json line;
};

Case make_case(const std::string& id, const std::string& prompt, const std::string& adapter) {
    Case c;
    c.id = id;
    c.request.prompt = prompt;
    c.request.adapter = adapter;
    c.request.params.max_new_tokens = kNew;
    c.request.params.do_sample = false;
    c.line = {{"id", id}, {"prompt", prompt},
              {"params", {{"max_new_tokens", kNew}, {"do_sample", false}, {"top_k", 0}, {"top_p", 1.0}, {"typical_p", 1.0},
                          {"temperature", 1.0}, {"repetition_penalty", 1.0}, {"logprobs", true}}}};
    if (!adapter.empty()) c.line["adapter"] = adapter;
    return c;
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max(1.0, std::fabs(b)); }

}  // namespace

class TestRemoteInspect : public QObject {
    Q_OBJECT
    Server server_;

    // Every case submitted at once through the remote engine in `dialect`, and what `generate`
    // makes of the same lines; the engine stays alive with the run.
    struct Run {
        std::unique_ptr<Engine> engine;
        std::vector<std::shared_ptr<WaitSink>> sinks;
        std::map<std::string, json> expected;
    };
    Run submitAll(RemoteDialect dialect, const std::vector<Case>& cases) {
        Run run;
        run.engine = ui::createRemoteEngine(endpoint(server_.url, dialect));
        std::vector<json> lines;
        for (const Case& c : cases) {
            run.sinks.push_back(std::make_shared<WaitSink>());
            run.engine->submit(c.request, run.sinks.back());
            lines.push_back(c.line);
        }
        run.expected = test::run_generate(lines, kBloom);
        return run;
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(server_.start({}, kBloom)); }

    void lorax_dialect_sends_and_shows_what_the_model_weighed() {
        std::vector<Case> cases;
        cases.push_back(make_case("alternatives", "5 7 0 0 =", "reverse"));
        cases.back().request.params.top_alternatives = 5;
        cases.back().line["params"]["top_alternatives"] = 5;
        cases.push_back(make_case("prompt", "8 0 9 9 =", "plus-one"));
        cases.back().request.params.prompt_logprobs = true;
        cases.back().line["params"]["prompt_logprobs"] = true;
        cases.push_back(make_case("merge", "5 9 9 3 =", ""));
        cases.back().request.merge = blend();
        cases.back().request.params.top_alternatives = 3;
        cases.back().line["params"]["top_alternatives"] = 3;
        cases.back().line["merged_adapters"] = {{"ids", {"plus-one", "reverse"}}, {"weights", {1.0, 1.0}},
                                                {"merge_strategy", "dare_linear"}, {"density", 0.7}, {"seed", 9}};

        Run run = submitAll(RemoteDialect::Lorax, cases);
        const auto& sinks = run.sinks;
        const auto& expected = run.expected;
        QCOMPARE(expected.size(), cases.size());
        for (size_t i = 0; i < cases.size(); ++i) {
            QVERIFY(sinks[i]->wait(120000));
            const FinishEvent& f = sinks[i]->finish;
            const json& want = expected.at(cases[i].id);
            QVERIFY2(f.reason != FinishReason::Error, (cases[i].id + ": " + f.error).c_str());
            QVERIFY2(!want.contains("error"), want.dump().c_str());
            QCOMPARE(f.token_ids, want.at("token_ids").get<std::vector<int64_t>>());
            QCOMPARE(f.text, want.at("text").get<std::string>());
            QCOMPARE(sinks[i]->tokens.size(), f.token_ids.size());   // every token reached the sink
            // Alternatives: with each streamed token and in the finish, as generate reports them.
            if (want.contains("alternatives")) {
                const json& alts = want.at("alternatives");
                QCOMPARE(f.alternatives.size(), alts.size());
                for (size_t t = 0; t < alts.size(); ++t) {
                    QCOMPARE(f.alternatives[t].size(), alts[t].size());
                    QCOMPARE(sinks[i]->tokens[t].alternatives.size(), alts[t].size());
                    for (size_t k = 0; k < alts[t].size(); ++k) {
                        QCOMPARE(f.alternatives[t][k].token_id, alts[t][k].at("token_id").get<int64_t>());
                        QCOMPARE(f.alternatives[t][k].text, alts[t][k].at("text").get<std::string>());
                        QVERIFY(close(f.alternatives[t][k].logprob, alts[t][k].at("logprob").get<double>()));
                    }
                }
            } else {
                QVERIFY(f.alternatives.empty());
            }
            // Prompt log-probabilities: LoRAX's prefill, the first token without one.
            if (want.contains("prompt_logprobs")) {
                const json& prompt = want.at("prompt_logprobs");
                QVERIFY(prompt.size() >= 3);
                QCOMPARE(f.prompt_logprobs.size(), prompt.size());
                for (size_t t = 0; t < prompt.size(); ++t) {
                    QCOMPARE(f.prompt_logprobs[t].token_id, prompt[t].at("token_id").get<int64_t>());
                    QCOMPARE(f.prompt_logprobs[t].logprob.has_value(), !prompt[t].at("logprob").is_null());
                    if (f.prompt_logprobs[t].logprob)
                        QVERIFY(close(*f.prompt_logprobs[t].logprob, prompt[t].at("logprob").get<double>()));
                }
            } else {
                QVERIFY(f.prompt_logprobs.empty());
            }
        }
        // The merge is neither of its adapters alone (it was sent, not dropped for the base model).
        const auto alone = test::run_generate({make_case("p", "5 9 9 3 =", "plus-one").line,
                                               make_case("r", "5 9 9 3 =", "reverse").line,
                                               make_case("b", "5 9 9 3 =", "").line},
                                              kBloom);
        const auto merged = expected.at("merge").at("token_ids");
        for (const char* other : {"b", "p", "r"}) QVERIFY2(merged != alone.at(other).at("token_ids"), other);
    }

    // OpenAI's dialect asks /v1/completions for `logprobs: k` and reads each token's top_logprobs
    // dict back as its k most likely alternatives (texts and logprobs as generate reports them; no
    // token ids, which OpenAI does not name): the popup lists them, and none can be forked.
    void openai_dialect_asks_for_and_shows_alternatives() {
        std::vector<Case> cases;
        cases.push_back(make_case("k5", "5 7 0 0 =", "reverse"));
        cases.back().request.params.top_alternatives = 5;
        cases.back().line["params"]["top_alternatives"] = 5;
        cases.push_back(make_case("k2", "8 0 9 9 =", "plus-one"));
        cases.back().request.params.top_alternatives = 2;
        cases.back().line["params"]["top_alternatives"] = 2;
        cases.push_back(make_case("none", "5 9 9 3 =", ""));
        Run run = submitAll(RemoteDialect::OpenAi, cases);
        const auto& sinks = run.sinks;
        const auto& expected = run.expected;
        QCOMPARE(expected.size(), cases.size());
        for (size_t i = 0; i < cases.size(); ++i) {
            QVERIFY(sinks[i]->wait(120000));
            const FinishEvent& f = sinks[i]->finish;
            const json& want = expected.at(cases[i].id);
            QVERIFY2(f.reason != FinishReason::Error, (cases[i].id + ": " + f.error).c_str());
            QCOMPARE(f.text, want.at("text").get<std::string>());
            const size_t n = want.at("token_ids").size();
            QCOMPARE(sinks[i]->tokens.size(), n);
            if (!want.contains("alternatives")) {
                QVERIFY(f.alternatives.empty());
                for (const auto& t : sinks[i]->tokens) QVERIFY(t.alternatives.empty());
                continue;
            }
            const json& alts = want.at("alternatives");
            QCOMPARE(f.alternatives.size(), n);
            for (size_t t = 0; t < n; ++t) {
                const std::string at = cases[i].id + " token " + std::to_string(t);
                QVERIFY2(f.alternatives[t].size() == alts[t].size(), at.c_str());
                QVERIFY2(sinks[i]->tokens[t].alternatives.size() == alts[t].size(), at.c_str());
                for (size_t k = 0; k < alts[t].size(); ++k) {
                    QCOMPARE(f.alternatives[t][k].token_id, int64_t(-1));
                    // The chosen token goes by the text it streamed as (its `tokens` entry; an
                    // end-of-sequence token's is empty), the others by their own.
                    const bool chosen = alts[t][k].at("token_id") == want.at("token_ids")[t];
                    const std::string text = chosen ? sinks[i]->tokens[t].text_delta : alts[t][k].at("text").get<std::string>();
                    QVERIFY2(f.alternatives[t][k].text == text, (at + ": " + f.alternatives[t][k].text).c_str());
                    QVERIFY2(close(f.alternatives[t][k].logprob, alts[t][k].at("logprob").get<double>()), at.c_str());
                }
            }
            // The popup the board and the columns show on hover: the alternatives, most likely
            // first, the chosen one marked by its text; no row forks (no token id to force).
            const TokenEvent& e = sinks[i]->tokens[1];
            ui::StreamedToken token;
            token.token_id = e.token_id;
            token.text = QString::fromStdString(e.text_delta);
            token.logprob = e.logprob;
            token.alternatives = e.alternatives;
            ui::AlternativesPopup popup(nullptr);
            popup.showToken(token, 1, QRect(0, 0, 10, 10));
            QCOMPARE(popup.rowCount(), int(alts[1].size()));
            QVERIFY(popup.isChosenRow(0));   // greedy: the chosen token is the most likely
            QVERIFY(!popup.isChosenRow(1));
            QVERIFY2(popup.rowText(0).contains(QStringLiteral("chosen")), qPrintable(popup.rowText(0)));
            QVERIFY(popup.rowText(1).contains(QString::number(double(e.alternatives[1].logprob), 'f', 3)));
            QSignalSpy forks(&popup, &ui::AlternativesPopup::alternativeChosen);
            QTest::mouseClick(&popup, Qt::LeftButton, {}, popup.rowRect(1).center());
            QCOMPARE(forks.count(), 0);
        }
    }

    void openai_dialect_names_what_it_cannot_send() {
        auto engine = ui::createRemoteEngine(endpoint(server_.url, RemoteDialect::OpenAi));
        Case c = make_case("merge", "5 9 9 3 =", "");
        c.request.merge = blend();
        auto sink = std::make_shared<WaitSink>();
        engine->submit(c.request, sink);
        QVERIFY(sink->wait(30000));
        QCOMPARE(sink->finish.reason, FinishReason::Error);
        QVERIFY2(sink->finish.error.find("merged adapters") != std::string::npos, sink->finish.error.c_str());
        Case p = make_case("prompt", "8 0 9 9 =", "plus-one");
        p.request.params.prompt_logprobs = true;
        auto psink = std::make_shared<WaitSink>();
        engine->submit(p.request, psink);
        QVERIFY(psink->wait(30000));
        QVERIFY2(psink->finish.error.find("prompt log-probabilities") != std::string::npos, psink->finish.error.c_str());
    }

    void cleanupTestCase() { QCOMPARE(server_.stop(), 0); }
};

QTEST_MAIN(TestRemoteInspect)
#include "test_remote_inspect.moc"
