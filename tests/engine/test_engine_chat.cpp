// Conversations as engine requests (tests/oracle/chat_engine_oracle.py records what transformers
// does on a tiny BLOOM whose tokenizer_config.json has a chat template): the prompt the model's
// template renders and its ids are apply_chat_template's, and greedy generation from a conversation
// equals generate() on those ids. A template's refusal, or a model without a template, is that
// request's error while the requests beside it finish normally. lorascope-cli reads "messages" in
// generate's JSON Lines and prints the rendered prompt and ids with chat-template --json.
#include "chat_records.h"
#include "collecting_sink.h"
#include "engine_test_support.h"
#include "lorascope/chat.h"
#include "lorascope/engine.h"
#include "lorascope/tokenizer.h"

#include <QtTest/QtTest>
#include <QProcess>
#include <QTemporaryDir>

#include <fstream>

using lorascope::FinishReason;
using lorascope::Request;
using lorascope::test::OrderedJson;

namespace {

const OrderedJson& records() { return lorascope::test::oracle_records("chat_engine/records.json"); }

std::string model_dir(const char* which = "model") { return lorascope::test::oracle_dir() + "/chat_engine/" + which; }

lorascope::Conversation conversation_of(const OrderedJson& record) {
    return lorascope::parse_conversation_json(record["messages"].dump(), record.contains("tools") ? record["tools"].dump() : "", "record");
}

Request chat_request(const OrderedJson& record) {
    Request r;
    r.conversation = conversation_of(record);
    r.params.max_new_tokens = records()["max_new_tokens"].get<int64_t>();
    r.params.repetition_penalty = records()["repetition_penalty"].get<double>();
    return r;
}

std::vector<int64_t> ids_of(const OrderedJson& j) { return j.get<std::vector<int64_t>>(); }

QString cli_output(const QStringList& args, int* exit_code) {
    QProcess p;
    p.start(QString::fromStdString(lorascope::test::cli_path()), args);
    p.waitForFinished(300000);
    *exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    if (*exit_code != 0) qWarning("%s", p.readAllStandardError().constData());
    return QString::fromUtf8(p.readAllStandardOutput());
}

}  // namespace

class TestEngineChat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(records().is_object(), "no chat_engine records: run the oracle_chat_engine step"); }

    void prompts_are_apply_chat_templates() {
        const auto engine = lorascope::test::make_engine(model_dir());
        const auto* templates = engine->chat_templates();
        QVERIFY(templates);
        const auto tokenizer = lorascope::load_tokenizer(model_dir());
        for (const auto& record : records()["conversations"]) {
            const std::string prompt = templates->render(conversation_of(record), {});
            QCOMPARE(QString::fromStdString(prompt), QString::fromStdString(record["prompt"].get<std::string>()));
            QCOMPARE(tokenizer->encode(prompt, /*add_special_tokens=*/false), ids_of(record["prompt_ids"]));
        }
    }

    void conversations_generate_as_transformers() {
        const auto engine = lorascope::test::make_engine(model_dir());
        auto sink = std::make_shared<lorascope::test::CollectingSink>();
        std::vector<lorascope::RequestId> ids;
        for (const auto& record : records()["conversations"]) ids.push_back(engine->submit(chat_request(record), sink));
        QVERIFY(sink->wait_finished(ids.size()));
        size_t i = 0;
        for (const auto& record : records()["conversations"]) {
            const auto finish = sink->get(ids[i++]).finishes.at(0);
            QVERIFY2(finish.reason == FinishReason::Length, finish.error.c_str());
            QCOMPARE(finish.token_ids, ids_of(record["token_ids"]));
            QCOMPARE(finish.usage.prompt_tokens, static_cast<int64_t>(record["prompt_ids"].size()));
        }
    }

    // Gemma-like: the template refuses a role with raise_exception. That request finishes with
    // transformers' message, naming the template's file; the one submitted beside it is unaffected.
    void a_template_refusal_is_that_requests_error() {
        const auto engine = lorascope::test::make_engine(model_dir());
        auto sink = std::make_shared<lorascope::test::CollectingSink>();
        const auto refused = engine->submit(chat_request(records()["refusal"]), sink);
        const auto& good = records()["conversations"][0];
        const auto fine = engine->submit(chat_request(good), sink);
        QVERIFY(sink->wait_finished(2));
        const auto r = sink->get(refused).finishes.at(0);
        QCOMPARE(r.reason, FinishReason::Error);
        const std::string want = model_dir() + "/tokenizer_config.json: " + records()["refusal"]["error"].get<std::string>();
        QCOMPARE(QString::fromStdString(r.error), QString::fromStdString(want));
        const auto f = sink->get(fine).finishes.at(0);
        QCOMPARE(f.reason, FinishReason::Length);
        QCOMPARE(f.token_ids, ids_of(good["token_ids"]));
    }

    void a_model_without_a_template_still_serves_prompts() {
        const auto engine = lorascope::test::make_engine(model_dir("plain"));
        QVERIFY(engine->chat_templates() == nullptr);
        auto sink = std::make_shared<lorascope::test::CollectingSink>();
        const auto& record = records()["conversations"][0];
        const auto chat = engine->submit(chat_request(record), sink);
        Request by_ids = chat_request(record);
        by_ids.conversation.reset();
        by_ids.input_ids = ids_of(record["prompt_ids"]);
        const auto plain = engine->submit(by_ids, sink);
        QVERIFY(sink->wait_finished(2));
        const auto c = sink->get(chat).finishes.at(0);
        QCOMPARE(c.reason, FinishReason::Error);
        QVERIFY2(c.error.find("no chat template") != std::string::npos, c.error.c_str());
        QVERIFY2(c.error.find("tokenizer_config.json") != std::string::npos, c.error.c_str());
        QCOMPARE(sink->get(plain).finishes.at(0).token_ids, ids_of(record["token_ids"]));
    }

    void a_conversation_with_a_prompt_is_refused() {
        const auto engine = lorascope::test::make_engine(model_dir());
        auto sink = std::make_shared<lorascope::test::CollectingSink>();
        Request both = chat_request(records()["conversations"][0]);
        both.prompt = "text";
        const auto id = engine->submit(both, sink);
        QVERIFY(sink->wait_until(id));
        const auto f = sink->get(id).finishes.at(0);
        QCOMPARE(f.reason, FinishReason::Error);
        QVERIFY2(f.error.find("one of a prompt, input_ids or a conversation") != std::string::npos, f.error.c_str());
    }

    // JSON Lines "messages" (tools keep their key order: the line's own), and chat-template --json.
    void cli_reads_messages_and_prints_ids() {
        QTemporaryDir tmp;
        std::ofstream input(tmp.filePath("in.jsonl").toStdString());
        for (const auto& record : records()["conversations"]) {
            OrderedJson line = {{"id", record["name"]}, {"messages", record["messages"]},
                                {"params", {{"max_new_tokens", records()["max_new_tokens"]}, {"repetition_penalty", records()["repetition_penalty"]}}}};
            if (record.contains("tools")) line["tools"] = record["tools"];
            input << line.dump() << "\n";
        }
        input.close();
        int code = 0;
        const QString out = cli_output({"generate", "--model", QString::fromStdString(model_dir()), "--threads", "1", "--input",
                                        tmp.filePath("in.jsonl")}, &code);
        QCOMPARE(code, 0);
        std::map<std::string, std::vector<int64_t>> generated;
        for (const QString& line : out.split('\n', Qt::SkipEmptyParts)) {
            const auto j = nlohmann::json::parse(line.toStdString());
            generated[j["id"].get<std::string>()] = j["token_ids"].get<std::vector<int64_t>>();
        }
        for (const auto& record : records()["conversations"]) {
            QCOMPARE(generated[record["name"].get<std::string>()], ids_of(record["token_ids"]));
            std::ofstream(tmp.filePath("m.json").toStdString()) << OrderedJson({{"messages", record["messages"]},
                                                                             {"tools", record.contains("tools") ? record["tools"] : OrderedJson()}}).dump();
            const QString shown = cli_output({"chat-template", "--model", QString::fromStdString(model_dir()), "--messages",
                                              tmp.filePath("m.json"), "--json"}, &code);
            QCOMPARE(code, 0);
            const auto j = nlohmann::json::parse(shown.toStdString());
            QCOMPARE(j["prompt"].get<std::string>(), record["prompt"].get<std::string>());
            QCOMPARE(j["ids"].get<std::vector<int64_t>>(), ids_of(record["prompt_ids"]));
        }
    }
};

QTEST_GUILESS_MAIN(TestEngineChat)
#include "test_engine_chat.moc"
