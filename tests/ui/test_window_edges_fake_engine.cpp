// The rough edges a new user met in the first hour (issue 31), each through the window's own
// controls against the fake engine: a failed request keeps what it streamed; Max new tokens stops
// at what the model holds and a request past it is refused at submit time; --lab leaves the saved
// layout alone and the parameters panel shows what applies; Tab leaves the prompt editor; Help
// and the title; a refused adapter leaves the list, the lab draws no line for a policy not yet
// run, the status bar follows Clear done, and the HF cache picker opens only a snapshot.
#include <QApplication>
#include <QChart>
#include <QComboBox>
#include <QLineEdit>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QLabel>
#include <QLineSeries>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QStatusBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "fake_engine.h"
#include "common/column_fit.h"
#include "lab/lab_charts.h"
#include "lab/lab_request_model.h"
#include "lab/lab_run_data.h"
#include "model/adapter_list_model.h"
#include "model/hf_cache.h"
#include "model/model_panel.h"
#include "recording_reporter.h"
#include "requests/params_panel.h"
#include "requests/prompt_composer.h"
#include "requests/request_board.h"
#include "requests/request_table_model.h"
#include "common/theme.h"
#include "shell/help_menu.h"
#include "shell/launch.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;

class WindowEdgesTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_;
    test::FakeEngineSettings settings_;
    std::shared_ptr<test::RecordingReporter> reporter_;

    std::unique_ptr<MainWindow> makeWindow(const QString& settings_name = QStringLiteral("settings.ini"), bool show = true) {
        MainWindowOptions o;
        auto* settings = &settings_;
        o.engine_factory = [settings](const EngineOptions& e) { return test::FakeEngine::create(e, *settings); };
        o.settings_file = dir_.filePath(settings_name);
        o.error_reporter = reporter_;
        o.about.torch_version = [] { return QStringLiteral("1.13.0-test"); };
        auto w = std::make_unique<MainWindow>(std::move(o));
        if (show) {
            w->resize(1280, 800);
            w->show();
        }
        return w;
    }

    QDockWidget* paramsDock(MainWindow& w) { return w.findChild<QDockWidget*>(QStringLiteral("paramsDock")); }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        model_ = test::makeFakeModelDir(dir_.path(), QStringLiteral("tiny-t5"));
    }
    void init() {
        settings_ = {};
        reporter_ = std::make_shared<test::RecordingReporter>();
    }

    // Item 2: rows of a request that failed mid-stream keep its text and tokens, the error beside them.
    void aFailedRequestKeepsWhatItStreamed() {
        settings_.fail_after_tokens = 5;
        auto w = makeWindow();
        QVERIFY(test::load_through_panel(*w, model_, 5000));
        w->composer()->setText(QStringLiteral("stream then fail"));
        QCOMPARE(w->submitPrompts().size(), size_t(1));
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
        const RequestRecord& r = w->requestModel()->recordAt(0);
        QCOMPARE(r.status, RequestStatus::Failed);
        const QString streamed = QString::fromStdString(test::FakeEngine::expected_text("stream then fail", "", 5));
        QCOMPARE(r.text, streamed);
        QCOMPARE(r.tokens.size(), size_t(5));
        QCOMPARE(r.generatedTokens(), qint64(5));
        const QString output = w->requestModel()->index(0, RequestTableModel::ColOutput).data().toString();
        QVERIFY2(output.startsWith(streamed.left(20)) && output.contains(QStringLiteral("decoder failure")), qPrintable(output));
        w->requestBoard()->view()->selectRow(0);
        auto* detail = w->requestBoard()->findChild<QPlainTextEdit*>();
        QVERIFY(detail);
        QVERIFY2(detail->toPlainText().startsWith(streamed) && detail->toPlainText().contains(QStringLiteral("decoder failure")),
                 qPrintable(detail->toPlainText()));
    }

    // Item 3: on a model with 64 positions Max new tokens stops at 63 and says so; a prompt file
    // asking 200 is refused at submit time, as that row's error, before the engine runs it.
    void maxNewTokensStopsAtWhatTheModelHolds() {
        settings_.bart_positions = 64;
        auto w = makeWindow();
        QVERIFY(test::load_through_panel(*w, model_, 5000));
        QCOMPARE(w->paramsPanel()->maxNewTokensLimit(), int64_t(63));
        QLabel* limit = nullptr;
        for (QLabel* l : w->paramsPanel()->findChildren<QLabel*>())
            if (l->accessibleName() == QLatin1String("Limit of new tokens")) limit = l;
        QVERIFY(limit && limit->isVisible());
        QVERIFY2(limit->text().contains(QStringLiteral("63")) && limit->text().contains(QStringLiteral("64")), qPrintable(limit->text()));
        ParamsPanel::Values v = w->paramsPanel()->values();
        v.max_new_tokens = 200;
        w->paramsPanel()->setValues(v);
        QCOMPARE(w->paramsPanel()->values().max_new_tokens, int64_t(63));   // what is shown is what is sent
        QCOMPARE(*w->paramsPanel()->params().max_new_tokens, int64_t(63));
        const QString file = dir_.filePath(QStringLiteral("long.jsonl"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"id\": \"long\", \"prompt\": \"too long\", \"params\": {\"max_new_tokens\": 200}}\n");
        f.close();
        w->composer()->loadFile(file);
        QCOMPARE(w->submitPrompts().size(), size_t(1));
        w->bridge()->drainNow();   // the refusal is there at once: no step had to run
        const RequestRecord& r = w->requestModel()->recordAt(0);
        QCOMPARE(r.status, RequestStatus::Failed);
        QVERIFY2(r.error.contains(QStringLiteral("200")) && r.error.contains(QStringLiteral("64 positions")), qPrintable(r.error));
        QVERIFY(r.tokens.empty());
    }

    // Item 4: --lab does not hide a dock for good, and saved parameters show as what they are.
    void labModeKeepsTheSavedLayoutAndShowsWhatApplies() {
        {
            auto w = makeWindow(QStringLiteral("layout.ini"));
            QVERIFY(test::load_through_panel(*w, model_, 5000));
            ParamsPanel::Values v = w->paramsPanel()->values();
            v.max_new_tokens = 200;
            v.ignore_eos = true;
            w->paramsPanel()->setValues(v);
            QVERIFY(paramsDock(*w)->isVisible());
            w->close();
        }
        {
            auto w = makeWindow(QStringLiteral("layout.ini"), false);
            LaunchOptions lab;
            lab.lab = true;
            startInteractive(*w, lab);
            QTRY_VERIFY(w->isVisible());
            w->close();
        }
        auto w = makeWindow(QStringLiteral("layout.ini"));
        QVERIFY2(paramsDock(*w)->isVisible(), "the lab mode hid the Parameters dock for the next plain start");
        QCOMPARE(w->paramsPanel()->values().max_new_tokens, int64_t(200));
        QCOMPARE(w->paramsPanel()->shownPreset(), ParamsPanel::Preset::Custom);
        QVERIFY(test::load_through_panel(*w, model_, 5000));
        QCOMPARE(w->paramsPanel()->shownPreset(), ParamsPanel::Preset::Custom);
        bool says = false;
        for (QLabel* l : w->paramsPanel()->findChildren<QLabel*>())
            says = says || (l->text().contains(QStringLiteral("ignore_eos")) && l->text().contains(QStringLiteral("max_new_tokens")));
        QVERIFY2(says, "the panel does not say which saved values differ from the model's defaults");
        w->paramsPanel()->applyPreset(ParamsPanel::Preset::ModelDefaults);
        ParamsPanel::Values v = w->paramsPanel()->values();
        QVERIFY(!v.ignore_eos);
        w->paramsPanel()->setValues(v);
        QCOMPARE(w->paramsPanel()->shownPreset(), ParamsPanel::Preset::ModelDefaults);
    }

    // Item 8: keyboard users can leave the prompt editor; Ctrl+Tab types a tab.
    void tabLeavesThePromptEditor() {
        auto w = makeWindow();
        QApplication::setActiveWindow(w.get());
        QPlainTextEdit* editor = w->composer()->editor();
        editor->setFocus();
        QTRY_VERIFY(editor->hasFocus());
        editor->setPlainText(QStringLiteral("abc"));
        QTest::keyClick(editor, Qt::Key_Tab);
        QCOMPARE(editor->toPlainText(), QStringLiteral("abc"));
        QTRY_VERIFY(!editor->hasFocus());
        editor->setFocus();
        QTRY_VERIFY(editor->hasFocus());
        editor->moveCursor(QTextCursor::End);
        QTest::keyClick(editor, Qt::Key_Tab, Qt::ControlModifier);
        QCOMPARE(editor->toPlainText(), QStringLiteral("abc\t"));
    }

    // Ctrl+Return submits and Ctrl+Shift+Return compares (the shortcuts help) wherever the focus
    // is; Return in the Model directory field loads. With no model loaded yet (Submit and Compare
    // disabled) the two shortcuts reached the field, which took them for Return and loaded the
    // model again: scripts/window-check's keys, sent while the demo model still loaded, did that.
    void submitShortcutsInTheModelFieldDoNotLoad() {
        auto w = makeWindow();
        QApplication::setActiveWindow(w.get());
        auto* field = w->modelPanel()->findChild<QComboBox*>();
        QVERIFY(field && field->accessibleName() == QStringLiteral("Model directory") && field->lineEdit());
        w->modelPanel()->setModelDir(model_);
        field->lineEdit()->setFocus();
        QTRY_VERIFY(field->lineEdit()->hasFocus());
        QSignalSpy loads(w->modelPanel(), &ModelPanel::loadRequested);
        QSignalSpy finished(w->bridge(), &EngineBridge::loadFinished);
        QSignalSpy submitted(w->bridge(), &EngineBridge::requestSubmitted);
        QTest::keyClick(field->lineEdit(), Qt::Key_Return, Qt::ControlModifier | Qt::ShiftModifier);
        QTest::keyClick(field->lineEdit(), Qt::Key_Return, Qt::ControlModifier);
        QTest::keyClick(field->lineEdit(), Qt::Key_Enter, Qt::ControlModifier | Qt::KeypadModifier);
        QCOMPARE(loads.count(), 0);
        QTest::keyClick(field->lineEdit(), Qt::Key_Return);   // Return alone loads what the field names
        QCOMPARE(loads.count(), 1);
        QVERIFY(finished.wait(5000));
        QTRY_VERIFY(w->bridge()->hasEngine());
        // Loaded, Submit takes its shortcut, and neither loads.
        w->composer()->setText(QStringLiteral("translate English to German: The house is wonderful."));
        field->lineEdit()->setFocus();
        QTest::keyClick(field->lineEdit(), Qt::Key_Return, Qt::ControlModifier);
        QTest::keyClick(field->lineEdit(), Qt::Key_Return, Qt::ControlModifier | Qt::ShiftModifier);
        QCOMPARE(loads.count(), 1);
        QCOMPARE(submitted.count(), 1);   // the prompt under the base model; no adapters to compare
    }

    // Item 9: a Help menu (README, shortcuts, About with the versions) and a title naming the model.
    void helpMenuAndTheTitleNameWhatRuns() {
        auto w = makeWindow();
        QStringList menus;
        for (QAction* a : w->menuBar()->actions()) menus << a->text();
        QVERIFY2(menus.contains(QStringLiteral("&Help")), qPrintable(menus.join(',')));
        QCOMPARE(menus.count(QStringLiteral("&View")), 1);   // the docks and the tabs (Alt+1..4) in one
        QCOMPARE(w->windowTitle(), QStringLiteral("Lorascope"));
        QVERIFY(test::load_through_panel(*w, model_, 5000));
        QCOMPARE(w->windowTitle(), QStringLiteral("tiny-t5 — Lorascope"));
        AboutInfo about;
        about.torch_version = [] { return QStringLiteral("1.13.0-test"); };
        const QString text = aboutText(about);
        QVERIFY2(text.contains(QString::fromLatin1(qVersion())) && text.contains(QStringLiteral("1.13.0-test")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("CPU features")));
        const QString keys = shortcutsText(w->actions());
        QVERIFY2(keys.contains(QKeySequence(Qt::CTRL | Qt::Key_O).toString(QKeySequence::NativeText)) &&
                     keys.contains(QStringLiteral("Ctrl+Tab")),
                 qPrintable(keys));
        QVERIFY2(!readmePath().isEmpty(), "no README found from the test's directory");
    }

    // Item 5: the WCAG arithmetic against its published reference points, and every colour the
    // window picks keeps 4.5:1 in a light and a dark palette (the old fixed orange under a dark
    // theme's white text was 1.4:1).
    void themeColoursKeepAaContrast() {
        QCOMPARE(contrastRatio(Qt::black, Qt::white), 21.0);
        QCOMPARE(contrastRatio(Qt::white, Qt::white), 1.0);
        QVERIFY(qAbs(contrastRatio(QColor(0x77, 0x77, 0x77), Qt::white) - 4.48) < 0.01);   // WCAG's "just fails" grey
        QVERIFY(qAbs(relativeLuminance(QColor(0xff, 0x00, 0x00)) - 0.2126) < 1e-9);
        QVERIFY(contrastRatio(QColor(0xff, 0xd2, 0x78), Qt::white) < 1.6);
        QPalette light(QColor(0xef, 0xef, 0xef));
        light.setColor(QPalette::Base, Qt::white);
        light.setColor(QPalette::Text, Qt::black);
        light.setColor(QPalette::WindowText, Qt::black);
        QPalette dark(QColor(0x35, 0x35, 0x35));
        dark.setColor(QPalette::Window, QColor(0x35, 0x35, 0x35));
        dark.setColor(QPalette::WindowText, Qt::white);
        dark.setColor(QPalette::Base, QColor(0x2a, 0x2a, 0x2a));
        dark.setColor(QPalette::Text, Qt::white);
        QVERIFY(!isDark(light));
        QVERIFY(isDark(dark));
        for (const QPalette& p : {light, dark}) {
            const QColor base = p.color(QPalette::Base), text = p.color(QPalette::Text);
            QVERIFY2(contrastRatio(differHighlight(p), text) >= kWcagAa, qPrintable(differHighlight(p).name()));
            for (const QColor& c : {errorText(p), runningText(p), warningText(p)})
                QVERIFY2(contrastRatio(c, base) >= kWcagAa, qPrintable(c.name() + QStringLiteral(" on ") + base.name()));
        }
    }

    // Item 10: a refused adapter is not listed; the status bar follows Clear done.
    void refusedAdaptersAndClearedRowsLeaveNoTrace() {
        auto w = makeWindow();
        QVERIFY(test::load_through_panel(*w, model_, 5000));
        const QString not_adapter = dir_.filePath(QStringLiteral("not-an-adapter"));
        QDir().mkpath(not_adapter);
        w->addAdapter(not_adapter);
        QTRY_COMPARE_WITH_TIMEOUT(reporter_->reports.size(), 1, 5000);
        QCOMPARE(w->adapterModel()->rowCount(), 0);
        w->composer()->setPrompts({QStringLiteral("one"), QStringLiteral("two"), QStringLiteral("three")});
        QCOMPARE(w->submitPrompts().size(), size_t(3));
        QTRY_COMPARE_WITH_TIMEOUT(w->requestModel()->unfinishedCount(), 0, 5000);
        auto status = [&w] {
            QString all;
            for (QLabel* l : w->statusBar()->findChildren<QLabel*>()) all += l->text();
            return all;
        };
        QVERIFY2(status().contains(QStringLiteral("of 3 requests")), qPrintable(status()));
        w->requestModel()->clearFinished();
        QVERIFY2(status().contains(QStringLiteral("of 0 requests")), qPrintable(status()));
    }

    // Item 10: the lab draws no line for a policy that has not run yet (B was a zero line).
    void theLabDrawsNothingForAPolicyNotRunYet() {
        std::vector<Request> requests(3);
        for (auto& r : requests) r.input_ids = {3, 4, 5};
        LabRunData a, b;
        a.reset(requests, {0, 0, 0});
        b.reset(requests, {0, 0, 0});
        LabEvents events;
        StepStats s;
        s.step = 1;
        s.rows = 1;
        s.decode_tokens = 1;
        events.steps.push_back(s);
        a.apply(events);
        LabCharts charts;
        charts.refresh({&a, &b}, {QStringLiteral("A"), QStringLiteral("B")});
        for (int i = 0; i < charts.chartCount(); ++i) {
            const auto series = charts.chart(i)->series();
            QVERIFY(series.size() >= 2);
            QCOMPARE(static_cast<QLineSeries*>(series.at(1))->count(), 0);
        }
    }

    // The lab's request table is told of the rows a tick changed, not of all of them: a whole-table
    // dataChanged per tick made the column fitter measure 500 x 11 cells, 20-30 ms of GUI time a tick.
    void theLabRequestTableRepaintsOnlyChangedRows() {
        std::vector<Request> requests(10);
        for (auto& r : requests) r.input_ids = {3, 4, 5};
        LabRunData run;
        run.reset(requests, std::vector<double>(10, 0.0));
        LabRequestModel model;
        model.setRun(&run);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        auto rows = [&] {
            QList<QPair<int, int>> out;
            for (const auto& args : changed) out.append({args[0].toModelIndex().row(), args[1].toModelIndex().row()});
            changed.clear();
            return out;
        };
        LabEvents submit;
        for (size_t i = 0; i < 10; ++i) submit.submits.push_back({i, RequestId(100 + i)});
        run.apply(submit);
        model.runChanged();
        QCOMPARE(rows(), (QList<QPair<int, int>>{{0, 9}}));
        model.runChanged();   // nothing new
        QCOMPARE(rows(), (QList<QPair<int, int>>{}));
        LabEvents step;
        StepStats s;
        s.rows = 3;
        s.row_requests = {103, 104, 108};
        step.steps.push_back(s);
        step.tokens = {103, 104, 108};
        run.apply(step);
        model.runChanged();
        QCOMPARE(rows(), (QList<QPair<int, int>>{{3, 4}, {8, 8}}));
        LabEvents finish;
        FinishEvent f;
        f.id = 104;
        finish.finishes.push_back(f);
        run.apply(finish);
        model.runChanged();
        QCOMPARE(rows(), (QList<QPair<int, int>>{{4, 4}}));
        QCOMPARE(model.data(model.index(4, LabRequestModel::ColState)).toString(), labStateName(LabRequestState::Finished));
        run.cancelUnfinished();   // every row but 4
        model.runChanged();
        QCOMPARE(rows(), (QList<QPair<int, int>>{{0, 3}, {5, 9}}));
        run.reset(requests, std::vector<double>(10, 0.0));   // same size, all new
        model.runChanged();
        QCOMPARE(rows(), (QList<QPair<int, int>>{{0, 9}}));
        QCOMPARE(model.data(model.index(4, LabRequestModel::ColState)).toString(), labStateName(LabRequestState::Waiting));
        QCOMPARE(reset.count(), 0);
    }

    // The column fitter shapes only the texts that might widen a column (their characters' advances
    // add up to more than the width it has): the width it finds is still the widest text's.
    void theColumnFitterSkipsOnlyTextsThatCannotWiden() {
        QStandardItemModel model;
        const QStringList texts = {QStringLiteral("7"), QStringLiteral("1111111"), QStringLiteral("9999"), QStringLiteral("WWW"),
                                   QStringLiteral("cancelled: the prompt is too long"), QStringLiteral("ijl.,"), QStringLiteral("AVATAR To"),
                                   QStringLiteral("décodé"), QStringLiteral("12.5"), QStringLiteral("finished"), QString()};
        for (const QString& t : texts) model.appendRow(new QStandardItem(t));
        QTableView view;
        view.setModel(&model);
        ColumnFitter fitter(&view, {0});
        const QFontMetricsF fm(view.font());
        const int margin = 2 * (view.style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, &view) + 1) + 1;
        for (int first = 0; first < texts.size(); ++first) {
            int widest = 0;
            for (int row = first; row < texts.size(); ++row)
                if (!texts[row].isEmpty()) widest = qMax(widest, int(std::ceil(fm.horizontalAdvance(texts[row]))) + margin);
            QVERIFY2(fitter.neededWidth(0, first, int(texts.size()) - 1) >= widest, qPrintable(QString::number(first)));
        }
        QCOMPARE(view.columnWidth(0), fitter.neededWidth(0, 0, int(texts.size()) - 1));
    }

    // Item 10: the HF cache picker opens a snapshot only, never "No models found" or a repository line.
    void hfCachePickerOpensOnlyASnapshot() {
        const QString empty = dir_.filePath(QStringLiteral("empty-hub"));
        QDir().mkpath(empty);
        {
            HfCachePickerDialog dialog(empty);
            QVERIFY(!dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Open)->isEnabled());
        }
        const QString hub = dir_.filePath(QStringLiteral("hub"));
        test::makeFakeModelDir(hub + QStringLiteral("/models--org--tiny/snapshots"), QStringLiteral("0123456789abcdef"));
        HfCachePickerDialog dialog(hub);
        QPushButton* open = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Open);
        auto* tree = dialog.findChild<QTreeWidget*>();
        tree->setCurrentItem(tree->topLevelItem(0));
        QVERIFY(!open->isEnabled());
        tree->setCurrentItem(tree->topLevelItem(0)->child(0));
        QVERIFY(open->isEnabled());
    }
};

QTEST_MAIN(WindowEdgesTest)
#include "test_window_edges_fake_engine.moc"
