// The real window over the remote backend: `lorascope-cli serve --demo` typed into the model panel
// as http://127.0.0.1:PORT with its API token. The server's adapters appear in the adapters
// panel; prompts across base and adapters stream into the board with the texts and token ids of
// `lorascope-cli generate`; a comparison gets one column per target; Escape cancels a long request
// and leaves the others intact. (Pause/step have no remote counterpart; the inspector's server
// page, polled from /metrics, is tests/serve/test_inspector_remote.cpp's.)
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <map>

#include "model/adapter_list_model.h"
#include "cli_process.h"
#include "compare/comparison_view.h"
#include "shell/main_window.h"
#include "model/model_panel.h"
#include "requests/prompt_composer.h"
#include "remote/remote_backend.h"
#include "requests/request_board.h"
#include "requests/request_table_model.h"
#include "serve_process.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;
using nlohmann::json;
using lorascope::test::q;

namespace {

const std::string kToken = "window-tok-93c1";

struct Expected {
    QString text, finish_reason;
    std::vector<int64_t> ids;
};

}  // namespace

class TestWindowRemote : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    test::Server server_;
    std::map<QString, Expected> expected_;   // by prompt id
    int windows_ = 0;

    std::unique_ptr<MainWindow> makeWindow() {
        MainWindowOptions o;
        o.engine_factory = [](const EngineOptions& e) {
            return createEngineForLocation(e, [](const EngineOptions&) -> std::unique_ptr<Engine> {
                throw std::runtime_error("this test loads servers only");
            });
        };
        o.settings_file = dir_.filePath(QStringLiteral("settings-%1.ini").arg(++windows_));
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->resize(1280, 800);
        w->show();
        return w;
    }

    bool loadServer(MainWindow& w) {
        auto* token = w.modelPanel()->findChild<QLineEdit*>();
        for (auto* edit : w.modelPanel()->findChildren<QLineEdit*>())
            if (edit->accessibleName() == QLatin1String("Server API token")) token = edit;
        if (!token || token->accessibleName() != QLatin1String("Server API token")) return false;
        token->setText(q(kToken));
        if (!test::load_through_panel(w, q(server_.url), 60000)) return false;
        QElapsedTimer t;
        t.start();
        while (w.adapterModel()->readyNames().size() < 3 && t.elapsed() < 10000) QTest::qWait(20);
        return w.adapterModel()->readyNames().size() == 3;
    }

    static QByteArray line(const QString& id, const QString& prompt, const QString& adapter, int max_new_tokens,
                           bool ignore_eos = false) {
        json params = {{"max_new_tokens", max_new_tokens}, {"do_sample", false}};
        if (ignore_eos) params["ignore_eos"] = true;
        json l = {{"id", id.toStdString()}, {"prompt", prompt.toStdString()}, {"params", params}};
        if (!adapter.isEmpty()) l["adapter"] = adapter.toStdString();
        return QByteArray::fromStdString(l.dump() + "\n");
    }

    QString writeFile(const QString& name, const QByteArray& text) {
        const QString path = dir_.filePath(name);
        QFile f(path);
        f.open(QIODevice::WriteOnly);
        f.write(text);
        return path;
    }

    void checkAgainstCli(const RequestRecord& r) {
        const auto it = expected_.find(r.client_id);
        QVERIFY2(it != expected_.end(), qPrintable(r.client_id));
        test::check_finished_as(r, it->second.text, it->second.ids, it->second.finish_reason);
    }

    QByteArray fivePrompts() const {
        return line("p1", "queen wolf kite goat sun", "", 20) + line("p2", "queen wolf kite goat sun", "upper", 20) +
               line("p3", "rain owl jam queen hat", "reverse", 20) + line("p4", "rain owl jam", "sort", 20) +
               line("p5", "sun pig owl", "upper", 3);
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(server_.start({"--api-token", q(kToken)}));
        // The CLI's answers for the same requests, as LoRAX's request decides them (greedy, knobs off).
        QString jsonl;
        const QByteArray five = fivePrompts();
        json generate_lines = json::array();
        for (const QByteArray& l : five.split('\n')) {
            if (l.isEmpty()) continue;
            json r = json::parse(l.toStdString());
            r["params"].update({{"top_k", 0}, {"top_p", 1.0}, {"typical_p", 1.0}, {"temperature", 1.0}, {"repetition_penalty", 1.0}});
            jsonl += q(r.dump() + "\n");
        }
        const auto r = test::run_cli_command({"generate", "--demo", "--input", writeFile("gen.jsonl", jsonl.toUtf8())});
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        size_t start = 0;
        while (start < r.out.size()) {
            const size_t end = r.out.find('\n', start);
            const json o = json::parse(r.out.substr(start, end - start));
            expected_[q(o.at("id"))] = {q(o.at("text")), q(o.at("finish_reason")), o.at("token_ids").get<std::vector<int64_t>>()};
            start = end + 1;
        }
        QCOMPARE(expected_.size(), size_t(5));
    }

    void promptsAcrossBaseAndAdaptersEqualTheCli() {
        auto w = makeWindow();
        QVERIFY(loadServer(*w));
        w->composer()->loadFile(writeFile("five.jsonl", fivePrompts()));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        QCOMPARE(w->submitPrompts().size(), size_t(5));
        QVERIFY(all.wait(120000));
        QSet<QString> adapters;
        for (const auto& r : w->requestModel()->records()) {
            checkAgainstCli(r);
            if (QTest::currentTestFailed()) return;
            adapters << r.adapterLabel();
        }
        QCOMPARE(adapters.size(), 4);   // base and three adapters
    }

    void comparisonAcrossTheServersAdapters() {
        auto w = makeWindow();
        QVERIFY(loadServer(*w));
        w->composer()->setText(QStringLiteral("rain owl jam queen hat"));
        QStringList targets{QString()};
        for (const QString& a : w->adapterModel()->readyNames()) targets << a;
        w->composer()->setSelectedTargets(targets);
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        const int group = w->compareTargets();
        QVERIFY(group > 0);
        QVERIFY(all.wait(60000));
        QCOMPARE(w->comparisonView()->columnCount(), 4);
        QSet<QString> texts;
        for (Ticket t : w->requestModel()->ticketsInGroup(group)) {
            const RequestRecord* r = nullptr;
            for (const auto& rec : w->requestModel()->records())
                if (rec.ticket == t) r = &rec;
            QVERIFY(r);
            QCOMPARE(r->status, RequestStatus::Finished);
            texts << r->text;
        }
        QVERIFY2(texts.contains(QStringLiteral("RAIN OWL JAM QUEEN HAT")), qPrintable(QStringList(texts.values()).join("|")));
        QVERIFY2(texts.contains(QStringLiteral("hat queen jam owl rain")), qPrintable(QStringList(texts.values()).join("|")));
    }

    void escapeCancelsALongRequestAndLeavesTheOthers() {
        auto w = makeWindow();
        QVERIFY(loadServer(*w));
        w->composer()->loadFile(writeFile("cancel.jsonl", line("p1", "queen wolf kite goat sun", "", 20) +
                                                              line("long", "rain owl jam", "", 10000, true) +
                                                              line("p3", "rain owl jam queen hat", "reverse", 20)));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        QCOMPARE(w->submitPrompts().size(), size_t(3));
        QTRY_VERIFY_WITH_TIMEOUT(w->requestModel()->recordAt(1).tokens.size() >= 5, 60000);
        w->requestBoard()->view()->selectRow(1);
        QTest::keyClick(w->requestBoard()->view(), Qt::Key_Escape);
        QVERIFY(all.wait(60000));
        const RequestRecord& cancelled = w->requestModel()->recordAt(1);
        QCOMPARE(cancelled.status, RequestStatus::Cancelled);
        QVERIFY(cancelled.tokens.size() < 10000);
        checkAgainstCli(w->requestModel()->recordAt(0));
        checkAgainstCli(w->requestModel()->recordAt(2));
    }

    void cleanupTestCase() { QCOMPARE(server_.stop(), 0); }
};

QTEST_MAIN(TestWindowRemote)
#include "test_window_remote.moc"
