// The main window driven through its own controls against the fake engine: load, adapters,
// five prompts across base and two adapters, cancel, the bad-directory dialog, comparison,
// pause/step, responsiveness while streaming, settings, and the screenshots.
#include <QAbstractButton>
#include <QApplication>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QMimeData>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "event_loop_probe.h"
#include "model/adapter_list_model.h"
#include "inspector/batch_timeline_widget.h"
#include "inspector/batching_inspector.h"
#include "compare/comparison_view.h"
#include "shell/error_reporter.h"
#include "model/hf_cache.h"
#include "fake_engine.h"
#include "shell/main_window.h"
#include "model/model_panel.h"
#include "window_actions.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_board.h"
#include "requests/request_table_model.h"
#include "shell/screenshot.h"
#include "inspector/step_stats_model.h"
#include "compare/token_stream_view.h"
#include "ui_test_support.h"

using namespace lorascope;
using namespace lorascope::ui;

class WindowFakeEngineTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_, adapter_a_, adapter_b_;
    test::FakeEngineSettings settings_;

    std::unique_ptr<MainWindow> makeWindow(const QString& settings_name = QStringLiteral("settings.ini")) {
        MainWindowOptions o;
        auto* settings = &settings_;
        o.engine_factory = [settings](const EngineOptions& e) { return test::FakeEngine::create(e, *settings); };
        o.settings_file = dir_.filePath(settings_name);
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->resize(1280, 800);
        w->show();
        return w;
    }

    // Loads through the model panel: type the directory, press its Load button.
    bool loadThroughPanel(MainWindow& w, const QString& dir) { return test::load_through_panel(w, dir, 5000); }

    bool addAdapters(MainWindow& w) {
        w.addAdapter(adapter_a_);
        w.addAdapter(adapter_b_);
        QElapsedTimer clock;
        clock.start();
        while (w.adapterModel()->readyNames().size() < 2 && clock.elapsed() < 5000) QTest::qWait(10);
        return w.adapterModel()->readyNames().size() == 2;
    }

    QMessageBox* errorDialog(MainWindow& w) {
        return w.findChild<QMessageBox*>(QLatin1String(DialogErrorReporter::kObjectName));
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        model_ = test::makeFakeModelDir(dir_.path(), QStringLiteral("tiny-t5"));
        adapter_a_ = test::makeFakeAdapterDir(dir_.path(), QStringLiteral("lora-a"));
        adapter_b_ = test::makeFakeAdapterDir(dir_.path(), QStringLiteral("lora-b"));
    }
    void init() { settings_ = {}; }

    void fivePromptsAcrossBaseAndTwoAdaptersStreamTheFakesText() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, model_));
        QVERIFY(addAdapters(*w));
        QCOMPARE(w->adapterModel()->data(w->adapterModel()->index(0, AdapterListModel::ColStatus)).toString(), QStringLiteral("ok"));
        // Five prompts from a JSON Lines file, each aimed at its own target; one overrides the length.
        const QString file = dir_.filePath(QStringLiteral("prompts.jsonl"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"id\": \"p1\", \"prompt\": \"first prompt\", \"adapter\": \"\"}\n"
                "{\"id\": \"p2\", \"prompt\": \"second prompt\", \"adapter\": \"lora-a\"}\n"
                "{\"id\": \"p3\", \"prompt\": \"third prompt\", \"adapter\": \"lora-b\"}\n"
                "{\"id\": \"p4\", \"prompt\": \"fourth prompt\", \"adapter\": \"lora-a\", \"params\": {\"max_new_tokens\": 5}}\n"
                "{\"id\": \"p5\", \"prompt\": \"fifth prompt\", \"adapter\": \"\"}\n");
        f.close();
        w->composer()->loadFile(file);
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        w->composer()->editor()->setFocus();
        QTest::keyClick(w->composer()->editor(), Qt::Key_Return, Qt::ControlModifier);   // Ctrl+Enter submits
        QCOMPARE(w->requestModel()->rowCount(), 5);
        QVERIFY(all.wait(10000));
        for (const auto& r : w->requestModel()->records()) {
            const int64_t n = r.client_id == QLatin1String("p4") ? 5 : 12;
            QCOMPARE(r.text, QString::fromStdString(test::FakeEngine::expected_text(r.prompt.toStdString(), r.adapter.toStdString(), n)));
            QCOMPARE(r.status, RequestStatus::Finished);
        }
        QCOMPARE(w->requestModel()->recordAt(1).adapter, QStringLiteral("lora-a"));
        QCOMPARE(w->requestModel()->recordAt(2).adapter, QStringLiteral("lora-b"));
    }

    void escapeCancelsTheSelectedRequest() {
        settings_.step_delay_ms = 15;
        settings_.default_new_tokens = 2000;
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, model_));
        w->composer()->setMode(PromptComposer::Mode::OnePerLine);
        w->composer()->setText(QStringLiteral("keep me\ncancel me"));
        QCOMPARE(w->submitPrompts().size(), size_t(2));
        QTest::qWait(100);
        w->requestBoard()->view()->selectRow(1);
        QTest::keyClick(w->requestBoard()->view(), Qt::Key_Escape);
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->recordAt(1).status, RequestStatus::Cancelled, 3000);
        QCOMPARE(w->requestModel()->recordAt(0).status, RequestStatus::Running);
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        w->bridge()->cancelAll();
        QVERIFY(all.wait(3000));
        QCOMPARE(w->requestModel()->recordAt(0).finish_reason, QStringLiteral("cancelled"));
    }

    void badDirectoryShowsTheDialogAndALaterLoadWorks() {
        auto w = makeWindow();
        const QString bad = dir_.filePath(QStringLiteral("not-a-model"));
        QDir().mkpath(bad);
        QSignalSpy failed(w->bridge(), &EngineBridge::loadFailed);
        w->modelPanel()->setModelDir(bad);
        QTest::mouseClick(w->modelPanel()->loadButton(), Qt::LeftButton);
        QVERIFY(failed.wait(5000));
        QMessageBox* box = errorDialog(*w);
        QVERIFY(box);
        QTRY_VERIFY(box->isVisible());
        QVERIFY2(box->text().contains(QStringLiteral("not-a-model/config.json")), qPrintable(box->text()));
        QVERIFY(w->modelPanel()->loadButton()->isEnabled());
        box->button(QMessageBox::Ok)->click();
        QTRY_VERIFY(!errorDialog(*w));
        QVERIFY(loadThroughPanel(*w, model_));
        QVERIFY(w->bridge()->hasEngine());
        QVERIFY(!errorDialog(*w));
    }

    void comparisonColumnsStreamAndHighlightDifferences() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, model_));
        QVERIFY(addAdapters(*w));
        w->composer()->setText(QStringLiteral("compare this prompt"));
        w->composer()->setSelectedTargets({QString(), QStringLiteral("lora-a"), QStringLiteral("lora-b")});
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        const int group = w->compareTargets();
        QVERIFY(group > 0);
        QVERIFY(all.wait(10000));
        ComparisonView* view = w->comparisonView();
        QCOMPARE(view->currentGroup(), group);
        QCOMPARE(view->columnCount(), 3);
        QVERIFY(view->columnTitle(0).contains(QStringLiteral("base")));
        QCOMPARE(view->columnView(0)->differingTokens(), 0);   // the reference
        // The fake changes every third token per adapter: 12 tokens -> 4 candidates, almost surely > 0 differ.
        QVERIFY(view->columnView(1)->differingTokens() > 0);
        QVERIFY(view->columnView(1)->differingTokens() <= 4);
        QVERIFY(view->columnView(1)->tooltipFor(0).contains(QStringLiteral("logprob")));
        QVERIFY(view->columnView(1)->tokenAt(QPoint(6, 8)) == 0);
    }

    void pauseAndSingleStepFromTheInspector() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, model_));
        w->showTab(MainWindow::Tab::Batching);
        BatchingInspector* inspector = w->batchingInspector();
        QTest::mouseClick(inspector->pauseButton(), Qt::LeftButton);
        QVERIFY(w->bridge()->isPaused());
        QVERIFY(inspector->stepButton()->isEnabled());
        w->composer()->setText(QStringLiteral("walk through"));
        w->submitPrompts();
        QTest::qWait(150);
        QCOMPARE(w->stepModel()->rowCount(), 0);
        QTest::mouseClick(inspector->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w->stepModel()->rowCount(), 1, 3000);
        const StepSample& first = w->stepModel()->samples().front();
        QCOMPARE(first.row_tickets.size(), size_t(1));
        QVERIFY(first.stats.row_prefill.at(0));   // the request joined in this step
        QTest::mouseClick(inspector->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(w->stepModel()->rowCount(), 2, 3000);
        QVERIFY(!w->stepModel()->samples().back().stats.row_prefill.at(0));
        QTest::qWait(100);
        QCOMPARE(w->stepModel()->rowCount(), 2);
        QCOMPARE(inspector->pointCount(0), 2);
        QVERIFY(inspector->timeline()->describeAt(QPoint(36, 24)).contains(QStringLiteral("prefill")));
        QTest::mouseClick(inspector->pauseButton(), Qt::LeftButton);
        QVERIFY(!w->bridge()->isPaused());
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
    }

    void eventLoopKeepsTurningWhileTheEngineStreams() {
        settings_.step_delay_ms = 1;   // ~1000 steps/s: far more events per tick than a real model gives
        settings_.default_new_tokens = 400;
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, model_));
        w->showTab(MainWindow::Tab::Batching);   // charts and timeline redraw too
        w->composer()->setMode(PromptComposer::Mode::OnePerLine);
        QStringList lines;
        for (int i = 0; i < 48; ++i) lines << QStringLiteral("responsive %1").arg(i);
        w->composer()->setText(lines.join(QLatin1Char('\n')));
        lorascope::test::EventLoopProbe probe;
        QCOMPARE(w->submitPrompts().size(), size_t(48));
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 60000);
        probe.stop();
        const double worst = probe.worst_busy_ms();
        qInfo("worst GUI-thread busy stretch while streaming %d x 400 tokens: %.1f ms CPU (wall-clock gap %lld ms) over %lld ms",
              48, worst, probe.worst_wall_gap_ms(), probe.elapsed_ms());
        QVERIFY2(probe.ticks() > 20, "the stream must last long enough for the measurement to mean something");
        QVERIFY2(worst < 500, qPrintable(QStringLiteral("worst busy stretch %1 ms").arg(worst)));
    }

    void settingsPersistRecentModelsAndParams() {
        {
            auto w = makeWindow(QStringLiteral("persist.ini"));
            QVERIFY(loadThroughPanel(*w, model_));
            w->paramsPanel()->applyPreset(ParamsPanel::Preset::Beam4);
            QCOMPARE(*w->paramsPanel()->params().num_beams, int64_t(4));
            w->close();
        }
        auto w = makeWindow(QStringLiteral("persist.ini"));
        QCOMPARE(w->modelPanel()->modelDir(), model_);
        QCOMPARE(w->paramsPanel()->values().num_beams, int64_t(4));
        // Filled from the model's generation config: unchanged fields are not sent.
        QVERIFY(loadThroughPanel(*w, model_));
        QCOMPARE(w->paramsPanel()->values().max_new_tokens, int64_t(12));
        QVERIFY(!w->paramsPanel()->params().max_new_tokens);
        QVERIFY(!w->paramsPanel()->params().do_sample);
    }

    void droppingDirectoriesLoadsTheModelAndAddsAdapters() {
        auto w = makeWindow();
        auto drop = [&w](const QString& path) {
            QMimeData data;
            data.setUrls({QUrl::fromLocalFile(path)});
            QDragEnterEvent enter(QPoint(600, 400), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(w.get(), &enter);
            if (!enter.isAccepted()) return false;
            QDropEvent drop_event(QPointF(600, 400), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(w.get(), &drop_event);
            return true;
        };
        QSignalSpy loaded(w->bridge(), &EngineBridge::loadFinished);
        QVERIFY(drop(model_));
        QVERIFY(loaded.wait(5000));
        QVERIFY(drop(adapter_a_));
        QTRY_COMPARE_WITH_TIMEOUT(w->adapterModel()->readyNames(), QStringList{QStringLiteral("lora-a")}, 5000);
        QVERIFY(!drop(dir_.filePath(QStringLiteral("does-not-exist"))));
    }

    void hfCachePickerListsCachedSnapshots() {
        const QString hub = dir_.filePath(QStringLiteral("hub"));
        test::makeFakeModelDir(hub + QStringLiteral("/models--org--tiny/snapshots"), QStringLiteral("0123456789abcdef"));
        HfCachePickerDialog dialog(hub);
        QCOMPARE(dialog.snapshotCount(), 1);
        auto* tree = dialog.findChild<QTreeWidget*>();
        QVERIFY(tree);
        QCOMPARE(tree->topLevelItem(0)->text(0), QStringLiteral("org/tiny"));
        tree->setCurrentItem(tree->topLevelItem(0)->child(0));
        QCOMPARE(dialog.selectedDirectory(), hub + QStringLiteral("/models--org--tiny/snapshots/0123456789abcdef"));
    }

    void screenshotsRenderAt1280x800() {
        auto w = makeWindow();
        QVERIFY(loadThroughPanel(*w, model_));
        QVERIFY(addAdapters(*w));
        w->composer()->setText(QStringLiteral("translate English to German: The house is wonderful."));
        w->composer()->setSelectedTargets({QString(), QStringLiteral("lora-a"), QStringLiteral("lora-b")});
        QVERIFY(w->compareTargets() > 0);
        w->composer()->setMode(PromptComposer::Mode::OnePerLine);
        w->composer()->setText(QStringLiteral("summarize: a short note\nquestion: what is LoRA?\nfix grammar: he go home"));
        w->composer()->setSelectedTargets({QString(), QStringLiteral("lora-a")});
        w->submitPrompts();
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 10000);
        w->requestBoard()->view()->selectRow(3);
        const QByteArray out = qgetenv("LORASCOPE_UI_SCREENSHOT_DIR");
        const QString dir = out.isEmpty() ? dir_.filePath(QStringLiteral("shots")) : QString::fromLocal8Bit(out);
        QString error;
        const QStringList files = renderScreenshots(*w, dir, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(files.size(), 3);
        for (const QString& f : files) {
            const QImage image(f);
            QCOMPARE(image.size(), QSize(1280, 800));
        }
    }
};

QTEST_MAIN(WindowFakeEngineTest)
#include "test_window_fake_engine.moc"
