// The Chat tab (ui/chat/) offscreen, through its own controls. On the real engine with the
// oracle's tiny templated BLOOM (tests/oracle/chat_engine_oracle.py): an answer streams into the
// base model's pane and equals `lorascope-cli generate` on the same "messages"; the prompt shown on
// demand is `lorascope-cli chat-template`'s byte for byte, its special tokens marked; edit-and-
// resend replaces the last turn and its answer; a second turn carries the first answer. On the fake
// engine: one conversation answered by two targets side by side, each pane its own.
#include <QtTest>

#include <QCheckBox>
#include <QFile>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextEdit>

#include <nlohmann/json.hpp>

#include "chat/chat_session.h"
#include "chat/chat_view.h"
#include "cli_process.h"
#include "engine_link/engine_bridge.h"
#include "fake_engine.h"
#include "test_env.h"

using nlohmann::json;
using namespace lorascope;
using namespace lorascope::ui;

namespace {

std::string model_dir() { return lorascope::test::oracle_dir() + "/chat_engine/model"; }

json message(const char* role, const QString& content) { return {{"role", role}, {"content", content.toStdString()}}; }

// `lorascope-cli generate`'s answer to `messages` with the view's parameters (max new tokens only).
std::string generate_answer(const json& messages, int max_new_tokens) {
    QTemporaryDir dir;
    QFile f(dir.filePath("in.jsonl"));
    f.open(QIODevice::WriteOnly);
    f.write((json{{"id", "x"}, {"messages", messages}, {"params", {{"max_new_tokens", max_new_tokens}}}}.dump() + "\n").c_str());
    f.close();
    const auto r = lorascope::test::run_cli_command({"generate", "--model", QString::fromStdString(model_dir()), "--input", f.fileName()});
    if (r.exit_code != 0) return "generate failed: " + r.err;
    return json::parse(r.out.substr(0, r.out.find('\n'))).at("text").get<std::string>();
}

std::string cli_prompt(const json& messages) {
    QTemporaryDir dir;
    QFile f(dir.filePath("chat.json"));
    f.open(QIODevice::WriteOnly);
    f.write(messages.dump().c_str());
    f.close();
    const auto r = lorascope::test::run_cli_command(
        {"chat-template", "--model", QString::fromStdString(model_dir()), "--messages", f.fileName()});
    return r.exit_code == 0 ? r.out : "chat-template failed: " + r.err;
}

bool wait_idle(ChatSession* s) {
    return QTest::qWaitFor([&] { return !s->busy(); }, 120000);
}

void load(EngineBridge& bridge, const std::string& dir) {
    QSignalSpy finished(&bridge, &EngineBridge::loadFinished);
    EngineOptions o;
    o.model_dir = dir;
    bridge.loadModel(o);
    QVERIFY(finished.wait(120000));
}

}  // namespace

class TestChatView : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void a_conversation_with_the_real_engine() {
        QVERIFY2(lorascope::test::exists(model_dir() + "/tokenizer_config.json"), "run the oracle_chat_engine step");
        EngineBridge bridge([](const EngineOptions& o) { return Engine::create(o); });
        load(bridge, model_dir());
        ChatView view(&bridge);
        view.resize(1100, 700);
        view.show();
        ChatSession* s = view.session();
        QCOMPARE(view.targetList()->count(), 1);   // the base model; this model has no adapters
        view.targetList()->item(0)->setCheckState(Qt::Checked);
        QCOMPARE(s->targets(), QStringList{QString()});
        s->setMaxNewTokens(8);
        view.systemPrompt()->setText(QStringLiteral("Be brief."));

        view.messageBox()->setPlainText(QStringLiteral("The quick brown fox"));
        view.sendButton()->click();
        QVERIFY(s->busy());
        QVERIFY(wait_idle(s));
        ChatTranscriptModel* t = s->transcript(QString());
        QCOMPARE(t->rowCount(), 2);
        json messages = {message("system", "Be brief."), message("user", "The quick brown fox")};
        QCOMPARE(t->turns()[1].text.toStdString(), generate_answer(messages, 8));
        QVERIFY(t->turns()[1].error.isEmpty());

        // The prompt shown on demand: what the model saw, plus nothing yet for the next turn.
        view.showPromptBox()->setChecked(true);
        QVERIFY(view.promptView()->isVisible());
        messages.push_back(message("assistant", t->turns()[1].text));
        QString error;
        QCOMPARE(s->renderedPrompt(QString(), &error).toStdString(), cli_prompt(messages));
        QVERIFY(view.promptView()->toPlainText().contains(QStringLiteral("<|im_start|>system\nBe brief.<|im_end|>")));
        QVERIFY(view.promptView()->toHtml().contains(QStringLiteral("font-weight:700")));   // special tokens marked

        // Edit-and-resend: the last user turn and its answer are replaced.
        view.editLastButton()->click();
        QCOMPARE(view.messageBox()->toPlainText(), QStringLiteral("The quick brown fox"));
        QCOMPARE(view.sendButton()->text(), QStringLiteral("Re&send"));
        view.messageBox()->setPlainText(QStringLiteral("Hello world"));
        view.sendButton()->click();
        QVERIFY(wait_idle(s));
        QCOMPARE(t->rowCount(), 2);
        QCOMPARE(t->turns()[0].text, QStringLiteral("Hello world"));
        messages = {message("system", "Be brief."), message("user", "Hello world")};
        const std::string first = generate_answer(messages, 8);
        QCOMPARE(t->turns()[1].text.toStdString(), first);

        // A second turn carries the first answer.
        view.messageBox()->setPlainText(QStringLiteral("And then?"));
        view.sendButton()->click();
        QVERIFY(wait_idle(s));
        QCOMPARE(t->rowCount(), 4);
        messages.push_back(message("assistant", QString::fromStdString(first)));
        messages.push_back(message("user", "And then?"));
        QCOMPARE(t->turns()[3].text.toStdString(), generate_answer(messages, 8));
    }

    void targets_answer_side_by_side_on_the_fake_engine() {
        EngineBridge bridge([](const EngineOptions& o) { return test::FakeEngine::create(o); });
        load(bridge, model_dir());   // the fake reads config.json only
        QTemporaryDir adapter;
        QFile(adapter.filePath("adapter_config.json")).open(QIODevice::WriteOnly);
        QSignalSpy loaded(&bridge, &EngineBridge::adapterLoaded);
        bridge.loadAdapter(QStringLiteral("terse"), adapter.path());
        QVERIFY(loaded.wait(30000));
        ChatView view(&bridge);
        view.show();
        QCOMPARE(view.targetList()->count(), 2);
        for (int i = 0; i < 2; ++i) view.targetList()->item(i)->setCheckState(Qt::Checked);
        QCOMPARE(view.session()->targets(), (QStringList{QString(), QStringLiteral("terse")}));
        QVERIFY(view.findChild<QTextEdit*>(QStringLiteral("chat-pane-base")));
        QVERIFY(view.findChild<QTextEdit*>(QStringLiteral("chat-pane-terse")));
        view.session()->setMaxNewTokens(6);
        view.messageBox()->setPlainText(QStringLiteral("Hi"));
        view.sendButton()->click();
        QVERIFY(wait_idle(view.session()));
        for (const QString& target : {QString(), QStringLiteral("terse")}) {
            const auto& turns = view.session()->transcript(target)->turns();
            QCOMPARE(turns.size(), size_t(2));
            // The fake's script for a conversation request (it has no prompt text) and this adapter.
            QCOMPARE(turns[1].text.toStdString(), test::FakeEngine::expected_text("", target.toStdString(), 6));
        }
        // Each pane shows its own answer.
        QVERIFY(view.findChild<QTextEdit*>(QStringLiteral("chat-pane-terse"))->toPlainText().contains(
            QString::fromStdString(test::FakeEngine::expected_text("", "terse", 6))));
        QVERIFY(view.session()->transcript(QString())->turns()[1].text !=
                view.session()->transcript(QStringLiteral("terse"))->turns()[1].text);
        // Without a template (the fake has none) the prompt pane says so instead of guessing.
        view.showPromptBox()->setChecked(true);
        QVERIFY(view.promptView()->toPlainText().contains(QStringLiteral("no chat template")));
        // Nothing to send: refused with a reason, nothing submitted.
        view.messageBox()->clear();
        view.sendButton()->click();
        QVERIFY(!view.session()->busy());
        QCOMPARE(view.session()->transcript(QString())->rowCount(), 2);
    }
};

QTEST_MAIN(TestChatView)
#include "test_chat_view.moc"
