// The main window driven through its own controls against the real LibTorch engine, once per model
// (a global data row each): the oracle's tiny T5 (own SentencePiece tokenizer) and two PEFT
// adapters, and the demo pack's Llama (decoder-only, grouped-query attention, SentencePiece BPE)
// and two of its adapters: load, adapters checked against `lorascope-cli info`, five prompts across
// base and adapters equal to `lorascope-cli generate` (and HF + PEFT greedy ids), cancel, the
// bad-directory dialog, pause/step, and the event loop's worst gap while the engine decodes.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QElapsedTimer>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "event_loop_probe.h"
#include "model/adapter_list_model.h"
#include "model/adapters_panel.h"
#include "inspector/batching_inspector.h"
#include "compare/comparison_view.h"
#include "e2e_support.h"
#include "shell/error_reporter.h"
#include "lorascope/engine.h"
#include "shell/main_window.h"
#include "model/model_panel.h"
#include "window_actions.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_board.h"
#include "requests/request_table_model.h"
#include "inspector/step_stats_model.h"

using namespace lorascope;
using namespace lorascope::ui;

namespace {

struct CliResult {
    QString text, finish_reason;
    std::vector<int64_t> token_ids;
};

std::vector<int64_t> idsOf(const QJsonArray& a) {
    std::vector<int64_t> out;
    for (const auto& v : a) out.push_back(v.toInteger());
    return out;
}

}  // namespace

class WindowRealEngineTest : public QObject {
    Q_OBJECT
    // One model's reference: its manifest and the CLI's answers, made once, on its first test.
    struct Reference {
        test::E2eManifest manifest;
        std::map<QString, CliResult> cli;   // by prompt id
    };
    QTemporaryDir dir_;
    std::map<QString, Reference> references_;   // by manifest directory
    test::E2eManifest manifest_;                 // the current row's
    std::map<QString, CliResult> cli_;
    std::vector<std::unique_ptr<QAbstractItemModelTester>> testers_;
    int windows_ = 0;

    std::unique_ptr<MainWindow> makeWindow() {
        MainWindowOptions o;
        o.engine_factory = [](const EngineOptions& e) { return Engine::create(e); };
        // A fresh settings file per window: parameters one test changes must not leak into the next.
        o.settings_file = dir_.filePath(QStringLiteral("settings-%1.ini").arg(++windows_));
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->modelPanel()->setThreads(1);   // the CLI runs with --threads 1 too; CI has 2 cores
        w->resize(1280, 800);
        w->show();
        testers_.clear();
        for (QAbstractItemModel* m : std::initializer_list<QAbstractItemModel*>{w->requestModel(), w->adapterModel(), w->stepModel()})
            testers_.push_back(std::make_unique<QAbstractItemModelTester>(m, QAbstractItemModelTester::FailureReportingMode::QtTest));
        return w;
    }

    // Types the directory into the model panel and presses its Load button.
    bool loadThroughPanel(MainWindow& w, const QString& dir) { return test::load_through_panel(w, dir, 120000); }

    // The adapters panel's own path (what its Add button and recent menu emit).
    bool addAdaptersThroughPanel(MainWindow& w) {
        for (const auto& a : manifest_.adapters) Q_EMIT w.adaptersPanel()->addRequested(a.dir);
        QElapsedTimer clock;
        clock.start();
        while (w.adapterModel()->readyNames().size() < 2 && clock.elapsed() < 60000) QTest::qWait(20);
        return w.adapterModel()->readyNames().size() == 2;
    }

    QString writePromptFile(const QString& name, const QByteArray& jsonl) {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write(jsonl);
        return path;
    }

    QJsonObject manifestPrompt(const QString& id) const {
        for (const auto& v : manifest_.prompts)
            if (v.toObject().value(QStringLiteral("id")).toString() == id) return v.toObject();
        return {};
    }

    QByteArray requestLine(const QString& id, const QJsonObject& extra_params = {}) const {
        const QJsonObject p = manifestPrompt(id);
        QJsonObject params{{QStringLiteral("max_new_tokens"), manifest_.max_new_tokens}};
        for (auto it = extra_params.begin(); it != extra_params.end(); ++it) params.insert(it.key(), it.value());
        QJsonObject line{{QStringLiteral("id"), id}, {QStringLiteral("prompt"), p.value(QStringLiteral("prompt"))},
                         {QStringLiteral("adapter"), p.value(QStringLiteral("adapter"))}, {QStringLiteral("params"), params}};
        return QJsonDocument(line).toJson(QJsonDocument::Compact) + '\n';
    }

    // Streamed pieces, final text and token ids of a finished request equal the CLI's for the same request.
    void checkAgainstCli(const RequestRecord& r) {
        const auto it = cli_.find(r.client_id);
        QVERIFY2(it != cli_.end(), qPrintable(r.client_id));
        test::check_finished_as(r, it->second.text, it->second.token_ids, it->second.finish_reason);
        // HF + PEFT agree: the oracle's greedy ids (eos included when generated), HF's decoded text
        // (tokenizer.decode(ids, skip_special_tokens=True)) and the prompt's length in HF's input_ids.
        const QJsonObject hf = manifestPrompt(r.client_id);
        QCOMPARE(it->second.token_ids, idsOf(hf.value(QStringLiteral("hf_greedy_ids")).toArray()));
        QCOMPARE(r.text, hf.value(QStringLiteral("hf_text")).toString());
        QVERIFY(r.have_usage);
        QCOMPARE(qint64(r.usage.prompt_tokens), qint64(hf.value(QStringLiteral("input_ids")).toArray().size()));
    }

    QMessageBox* errorDialog(MainWindow& w) {
        return w.findChild<QMessageBox*>(QLatin1String(DialogErrorReporter::kObjectName));
    }

    // The reference: the same five requests through lorascope-cli generate, and the prompts' ids.
    void makeReference(const QString& subdir, Reference& ref) {
        manifest_ = test::loadE2eManifest(subdir);
        QVERIFY2(manifest_.error.isEmpty(), qPrintable(manifest_.error));
        cli_.clear();
        QByteArray input;
        for (const auto& v : manifest_.prompts) input += requestLine(v.toObject().value(QStringLiteral("id")).toString());
        QString error;
        const QByteArray out = test::runCli(QStringList{QStringLiteral("generate"), QStringLiteral("--model"), manifest_.model}
                                                << test::cliAdapterArgs(manifest_)
                                                << QStringList{QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--input"),
                                                               QStringLiteral("-"), QStringLiteral("--output"), QStringLiteral("-")},
                                            input, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (const QJsonObject& o : test::parseJsonLines(out)) {
            QVERIFY2(!o.contains(QStringLiteral("error")), qPrintable(QString::fromUtf8(QJsonDocument(o).toJson())));
            cli_[o.value(QStringLiteral("id")).toString()] = {o.value(QStringLiteral("text")).toString(),
                                                              o.value(QStringLiteral("finish_reason")).toString(),
                                                              idsOf(o.value(QStringLiteral("token_ids")).toArray())};
        }
        QCOMPARE(cli_.size(), size_t(5));
        // The prompts' ids as our tokenizer makes them (what the window submits) equal HF's input_ids.
        for (const auto& v : manifest_.prompts) {
            const QJsonObject p = v.toObject();
            const QByteArray tok = test::runCli({QStringLiteral("tokenize"), QStringLiteral("--model"), manifest_.model,
                                                 QStringLiteral("--text"), p.value(QStringLiteral("prompt")).toString()},
                                                {}, &error);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QCOMPARE(idsOf(QJsonDocument::fromJson(tok).object().value(QStringLiteral("ids")).toArray()),
                     idsOf(p.value(QStringLiteral("input_ids")).toArray()));
        }
        ref = {manifest_, cli_};
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void initTestCase_data() {
        QTest::addColumn<QString>("manifest");
        QTest::addColumn<QString>("modelType");
        QTest::newRow("t5") << QStringLiteral("ui_e2e") << QStringLiteral("t5");
        QTest::newRow("llama-demo") << QStringLiteral("ui_e2e/llama") << QStringLiteral("llama");
    }

    void init() {
        QFETCH_GLOBAL(QString, manifest);
        auto found = references_.find(manifest);
        if (found == references_.end()) {
            Reference ref;
            makeReference(manifest, ref);
            if (QTest::currentTestFailed()) return;
            found = references_.emplace(manifest, std::move(ref)).first;
        }
        manifest_ = found->second.manifest;
        cli_ = found->second.cli;
    }

    void loadAndAddAdaptersMatchCliInfo() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(w->bridge()->hasEngine());
        QFETCH_GLOBAL(QString, modelType);
        QCOMPARE(QString::fromStdString(w->bridge()->modelConfig()->model_type), modelType);
        QVERIFY(addAdaptersThroughPanel(*w));
        QString error;
        const QByteArray out = test::runCli(QStringList{QStringLiteral("info"), QStringLiteral("--model"), manifest_.model}
                                                << test::cliAdapterArgs(manifest_),
                                            {}, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QJsonArray adapters = QJsonDocument::fromJson(out).object().value(QStringLiteral("adapters")).toArray();
        QCOMPARE(adapters.size(), 2);
        AdapterListModel* model = w->adapterModel();
        for (const auto& v : adapters) {
            const QJsonObject a = v.toObject();
            const QJsonObject applied = a.value(QStringLiteral("applied")).toObject();
            const int row = model->rowOf(a.value(QStringLiteral("name")).toString());
            QVERIFY2(row >= 0, qPrintable(a.value(QStringLiteral("name")).toString()));
            QStringList targets;
            for (const auto& t : applied.value(QStringLiteral("targets")).toArray()) targets << t.toString();
            QCOMPARE(model->data(model->index(row, AdapterListModel::ColRank)).toLongLong(), applied.value(QStringLiteral("rank")).toInteger());
            QCOMPARE(model->data(model->index(row, AdapterListModel::ColTargets)).toString(), targets.join(QStringLiteral(", ")));
            QCOMPARE(model->data(model->index(row, AdapterListModel::ColStatus)).toString(), QStringLiteral("ok"));
            QCOMPARE(a.value(QStringLiteral("validation")).toString(), QStringLiteral("ok"));
        }
        // The two adapters really differ (rank and target set) so the check above means something.
        QVERIFY(model->data(model->index(0, AdapterListModel::ColRank)) != model->data(model->index(1, AdapterListModel::ColRank)));
    }

    void fivePromptsAcrossBaseAndAdaptersEqualTheCli() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(addAdaptersThroughPanel(*w));
        QByteArray jsonl;
        for (const auto& v : manifest_.prompts) jsonl += requestLine(v.toObject().value(QStringLiteral("id")).toString());
        w->composer()->loadFile(writePromptFile(QStringLiteral("five.jsonl"), jsonl));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        w->composer()->editor()->setFocus();
        QTest::keyClick(w->composer()->editor(), Qt::Key_Return, Qt::ControlModifier);   // Ctrl+Enter submits
        QCOMPARE(w->requestModel()->rowCount(), 5);
        QVERIFY(all.wait(120000));
        QSet<QString> adapters;
        for (const auto& r : w->requestModel()->records()) {
            checkAgainstCli(r);
            if (QTest::currentTestFailed()) return;
            adapters << r.adapterLabel();
        }
        QCOMPARE(adapters.size(), 3);   // base and both adapters
    }

    void comparisonColumnsJoinTheBatchInTheSameStep() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(addAdaptersThroughPanel(*w));
        w->composer()->setText(manifestPrompt(QStringLiteral("p2")).value(QStringLiteral("prompt")).toString());
        QStringList targets{QString()};
        for (const auto& a : manifest_.adapters) targets << a.name;
        w->composer()->setSelectedTargets(targets);
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        const int group = w->compareTargets();
        QVERIFY(group > 0);
        QVERIFY(all.wait(60000));
        QCOMPARE(w->comparisonView()->columnCount(), 3);
        const std::vector<Ticket> tickets = w->requestModel()->ticketsInGroup(group);
        QCOMPARE(tickets.size(), size_t(3));
        // The first step that holds any column holds all three, each as a joining (prefill) row.
        for (const StepSample& s : w->stepModel()->samples()) {
            int joined = 0;
            for (size_t i = 0; i < s.row_tickets.size(); ++i)
                if (std::find(tickets.begin(), tickets.end(), s.row_tickets[i]) != tickets.end()) joined += s.stats.row_prefill.at(i) ? 1 : 0;
            if (joined == 0) continue;
            QCOMPARE(joined, 3);
            return;
        }
        QFAIL("no step held the comparison's requests");
    }

    void cancellingALongRequestLeavesTheOthersIntact() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(addAdaptersThroughPanel(*w));
        const QJsonObject long_params{{QStringLiteral("max_new_tokens"), 3000}, {QStringLiteral("ignore_eos"), true}};
        w->composer()->loadFile(writePromptFile(QStringLiteral("cancel.jsonl"),
                                                requestLine(QStringLiteral("p1")) + requestLine(QStringLiteral("p2"), long_params) +
                                                    requestLine(QStringLiteral("p3"))));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        QCOMPARE(w->submitPrompts().size(), size_t(3));
        QTRY_VERIFY_WITH_TIMEOUT(w->requestModel()->recordAt(1).tokens.size() >= 5, 60000);
        QCOMPARE(w->requestModel()->recordAt(1).status, RequestStatus::Running);
        w->requestBoard()->view()->selectRow(1);
        QTest::keyClick(w->requestBoard()->view(), Qt::Key_Escape);
        QVERIFY(all.wait(60000));
        const RequestRecord& cancelled = w->requestModel()->recordAt(1);
        QCOMPARE(cancelled.status, RequestStatus::Cancelled);
        QCOMPARE(cancelled.finish_reason, QStringLiteral("cancelled"));
        QVERIFY2(cancelled.tokens.size() < 3000, "cancelled mid-stream");
        checkAgainstCli(w->requestModel()->recordAt(0));
        checkAgainstCli(w->requestModel()->recordAt(2));
    }

    void badDirectoryShowsTheDialogAndALaterLoadWorks() {
        auto w = makeWindow();
        const QString bad = dir_.filePath(QStringLiteral("not-a-model"));
        QDir().mkpath(bad);
        QSignalSpy failed(w->bridge(), &EngineBridge::loadFailed);
        w->modelPanel()->setModelDir(bad);
        QTest::mouseClick(w->modelPanel()->loadButton(), Qt::LeftButton);
        QVERIFY(failed.wait(60000));
        QMessageBox* box = errorDialog(*w);
        QVERIFY(box);
        QTRY_VERIFY(box->isVisible());
        QVERIFY2(box->text().contains(QStringLiteral("not-a-model")), qPrintable(box->text()));
        QVERIFY(!w->bridge()->hasEngine());
        box->button(QMessageBox::Ok)->click();
        QTRY_VERIFY(!errorDialog(*w));
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(w->bridge()->hasEngine());
        QVERIFY(!errorDialog(*w));
    }

    void pauseAndStepWalkTheRealEngineOneStepAtATime() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        w->showTab(MainWindow::Tab::Batching);
        BatchingInspector* inspector = w->batchingInspector();
        QTest::mouseClick(inspector->pauseButton(), Qt::LeftButton);
        QVERIFY(w->bridge()->isPaused());
        const QJsonObject long_params{{QStringLiteral("max_new_tokens"), 40}, {QStringLiteral("ignore_eos"), true}};
        w->composer()->loadFile(writePromptFile(QStringLiteral("step1.jsonl"), requestLine(QStringLiteral("p1"), long_params)));
        QCOMPARE(w->submitPrompts().size(), size_t(1));
        QTest::qWait(300);
        QCOMPARE(w->stepModel()->rowCount(), 0);   // held
        QTest::mouseClick(inspector->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w->stepModel()->rowCount(), 1, 30000);
        const Ticket first = w->requestModel()->recordAt(0).ticket;
        {
            const StepSample& s = w->stepModel()->samples().back();
            QCOMPARE(s.row_tickets, std::vector<Ticket>{first});
            QCOMPARE(s.stats.row_prefill, std::vector<bool>{true});
        }
        QTest::mouseClick(inspector->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w->stepModel()->rowCount(), 2, 30000);
        QCOMPARE(w->stepModel()->samples().back().stats.row_prefill, std::vector<bool>{false});
        QTest::qWait(300);
        QCOMPARE(w->stepModel()->rowCount(), 2);   // one StepStats per Step, no more
        // A second (base-model) request joins the running batch at the next step: its row is the prefill one.
        w->composer()->loadFile(writePromptFile(QStringLiteral("step2.jsonl"), requestLine(QStringLiteral("p5"), long_params)));
        QCOMPARE(w->submitPrompts().size(), size_t(1));
        QTest::qWait(300);
        QCOMPARE(w->stepModel()->rowCount(), 2);
        QTest::mouseClick(inspector->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w->stepModel()->rowCount(), 3, 30000);
        const Ticket second = w->requestModel()->recordAt(1).ticket;
        QVERIFY2(w->requestModel()->recordAt(1).error.isEmpty(), qPrintable(w->requestModel()->recordAt(1).error));
        {
            const StepSample& s = w->stepModel()->samples().back();
            QCOMPARE(s.row_tickets.size(), size_t(2));
            QCOMPARE(s.stats.row_prefill.size(), size_t(2));
            for (size_t i = 0; i < 2; ++i) QCOMPARE(bool(s.stats.row_prefill[i]), s.row_tickets[i] == second);
            QVERIFY(std::find(s.row_tickets.begin(), s.row_tickets.end(), first) != s.row_tickets.end());
        }
        QTest::qWait(300);
        QCOMPARE(w->stepModel()->rowCount(), 3);
        QCOMPARE(w->requestModel()->recordAt(0).tokens.size(), size_t(3));   // one token per step
        QCOMPARE(w->requestModel()->recordAt(1).tokens.size(), size_t(1));
        QTest::mouseClick(inspector->pauseButton(), Qt::LeftButton);
        QVERIFY(!w->bridge()->isPaused());
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 60000);
        QCOMPARE(w->requestModel()->recordAt(0).tokens.size(), size_t(40));
    }

    // Removing an adapter that a paused request pins leaves unload_adapter() waiting on the bridge's
    // worker; quitting then must still tear everything down at once (it used to wait for ever).
    void removingAPinnedAdapterWhilePausedThenQuittingIsPrompt() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(addAdaptersThroughPanel(*w));
        const QString name = manifest_.adapters.front().name;
        w->bridge()->setPaused(true);
        ParamsPanel::Values v = w->paramsPanel()->values();
        v.max_new_tokens = 400;
        v.ignore_eos = true;
        w->paramsPanel()->setValues(v);
        w->composer()->setMode(PromptComposer::Mode::OnePerLine);
        w->composer()->setText(QStringLiteral("The quick brown fox"));
        w->composer()->setSelectedTargets({name});
        QCOMPARE(w->submitPrompts().size(), size_t(1));
        w->bridge()->stepOnce();   // admitted: the request now pins the adapter
        QTRY_VERIFY_WITH_TIMEOUT(w->stepModel()->rowCount() >= 1, 30000);
        w->bridge()->unloadAdapter(name);
        QTest::qWait(300);         // the worker now waits inside unload_adapter()
        // Returning at all is the check: the old teardown joined a worker that waited for ever (the
        // test function's timeout then fails it). No wall-clock bound: it would flake under load.
        w.reset();
        QVERIFY(!w);
    }

    void eventLoopKeepsTurningWhileTheRealEngineDecodes() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, manifest_.model));
        QVERIFY(addAdaptersThroughPanel(*w));
        w->showTab(MainWindow::Tab::Batching);   // charts and timeline redraw too
        // Sized so that decoding lasts well over the 300 ms the check below needs: 200 new tokens took
        // 281 ms once the CPU engine got faster (T5's relative positions have no length limit).
        constexpr int kNewTokens = 800;
        ParamsPanel::Values v = w->paramsPanel()->values();
        v.max_new_tokens = kNewTokens;
        v.ignore_eos = true;
        w->paramsPanel()->setValues(v);
        w->composer()->setMode(PromptComposer::Mode::OnePerLine);
        QStringList lines;
        for (int i = 0; i < 16; ++i) lines << QStringLiteral("The quick brown fox %1").arg(i);
        w->composer()->setText(lines.join(QLatin1Char('\n')));
        QStringList targets{QString()};
        for (const auto& a : manifest_.adapters) targets << a.name;
        w->composer()->setSelectedTargets(targets);   // 16 prompts x (base + 2 adapters) = 48 requests
        lorascope::test::EventLoopProbe probe;
        QCOMPARE(w->submitPrompts().size(), size_t(48));
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 300000);
        probe.stop();
        const double worst = probe.worst_busy_ms();
        qint64 tokens = 0;
        for (const auto& r : w->requestModel()->records()) {
            QCOMPARE(r.status, RequestStatus::Finished);
            tokens += qint64(r.tokens.size());
        }
        QCOMPARE(tokens, qint64(48 * kNewTokens));
        qInfo("worst GUI-thread busy stretch while the real engine decoded 48 x %d tokens: %.1f ms CPU (wall-clock gap "
              "%lld ms) over %lld ms (%d steps)",
              kNewTokens, worst, probe.worst_wall_gap_ms(), probe.elapsed_ms(), w->stepModel()->rowCount());
        QVERIFY2(probe.ticks() > 20, "the decode must last long enough for the measurement to mean something");
        QVERIFY2(worst < 500, qPrintable(QStringLiteral("worst busy stretch %1 ms").arg(worst)));
    }
};

QTEST_MAIN(WindowRealEngineTest)
#include "test_window_real_engine.moc"
