// The batching lab against the real LibTorch engine on the demo pack's T5 and its three adapters,
// offscreen: the preset workload (all at once) under A (continuous) and B (static) gives the same
// deterministic figures and the same step stream as `lorascope-cli bench` on the same workload
// file and model (steps, rows per step, padding share, generated tokens, the whole steps CSV but
// for wall times); end-to-end latency and goodput are what the exported requests CSV gives; the
// timeline's cells are that StepStats stream; the export reads back; the lab
// screenshot is not blank; and a 500-request workload keeps the event loop turning.
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QDockWidget>
#include <QHeaderView>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <QChart>
#include <QXYSeries>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "cli_process.h"
#include "lab_e2e_support.h"
#include "csv_rows.h"
#include "shell/error_reporter.h"
#include "recording_reporter.h"
#include "event_loop_probe.h"
#include "lab/lab_charts.h"
#include "lab/lab_goodput_form.h"
#include "lab/lab_latency_charts.h"
#include "lab/lab_policy_editor.h"
#include "lab/lab_request_model.h"
#include "lab/lab_run_data.h"
#include "lab/lab_runner.h"
#include "lab/lab_summary_model.h"
#include "lab/lab_timeline_widget.h"
#include "lab/lab_view.h"
#include "lab/lab_workload_form.h"
#include "lorascope/bench_report.h"
#include "lorascope/demo_pack.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "lorascope/workload.h"
#include "model/adapter_list_model.h"
#include "model/adapters_panel.h"
#include "compare/comparison_view.h"
#include "shell/main_window.h"
#include "requests/prompt_composer.h"
#include "requests/request_table_model.h"
#include "model/model_panel.h"
#include "shell/screenshot.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;
using test::readAll;
using test::withoutMeasuredColumns;

namespace {

double pixelVariance(const QImage& image) {
    const QImage gray = image.convertToFormat(QImage::Format_Grayscale8);
    double sum = 0, sum2 = 0;
    const double n = double(gray.width()) * gray.height();
    for (int y = 0; y < gray.height(); ++y) {
        const uchar* row = gray.constScanLine(y);
        for (int x = 0; x < gray.width(); ++x) {
            sum += row[x];
            sum2 += double(row[x]) * row[x];
        }
    }
    const double mean = sum / n;
    return sum2 / n - mean * mean;
}

}  // namespace

class LabRealEngineTest : public QObject {
    Q_OBJECT
    test::DemoLabWindow demo_;
    QStringList preset_steps_[2];   // the preset's steps CSV per policy (wall times left out), as bench gave them

    LabView* lab() const { return demo_.window->labView(); }

    bool runAndWait(int timeout_ms) {
        if (!lab()->run()) return false;
        QElapsedTimer clock;
        clock.start();
        while (lab()->runner()->isRunning() && clock.elapsed() < timeout_ms) QTest::qWait(20);
        return !lab()->runner()->isRunning();
    }

    // `lorascope-cli bench --demo` on the workload file under policy `policy` of the lab's editor.
    QJsonObject cliBench(const QString& workload, int policy, const QString& csv) {
        return test::cliBench(workload, lab()->policyEditor()->apply(policy, EngineOptions()), csv);
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(!test::cli_path().empty(), "LORASCOPE_CLI is not set");
        QVERIFY(demo_.open());
    }

    void presetMatchesTheCliBench() {
        lab()->usePreset();
        const Workload workload = lab()->workloadForm()->workload();
        QCOMPARE(workload.arrival.kind, ArrivalKind::All);
        QCOMPARE(int(workload.adapters.size()), 1 + int(demo_.model.adapters.size()));   // base and every adapter
        const QString file = demo_.dir.filePath(QStringLiteral("preset.json"));
        {
            std::ofstream out(file.toStdString());
            out << workload_to_json(workload);
        }
        QVERIFY(runAndWait(240000));
        QVERIFY2(demo_.reporter->reports.isEmpty(), qPrintable(demo_.reporter->reports.join('\n')));
        LabRunner* runner = lab()->runner();
        QCOMPARE(runner->policyCount(), 2);
        for (int p = 0; p < 2; ++p) {
            const LabRunData& d = runner->data(p);
            QVERIFY(d.hasFigures());
            const QString csv = demo_.dir.filePath(QStringLiteral("cli-%1.csv").arg(p));
            const QJsonObject bench = cliBench(file, p, csv);
            QVERIFY2(!bench.isEmpty(), "no bench report");
            QCOMPARE(bench.value("batching").toString(), p == 0 ? QStringLiteral("continuous") : QStringLiteral("static"));
            QCOMPARE(bench.value("kv_cache_dtype").toString(), QStringLiteral("float32"));  // auto under float32
            // Rows per step and everything else the engine decided, step by step.
            std::ostringstream lab_csv;
            write_steps_csv(lab_csv, d.steps());
            QCOMPARE(withoutMeasuredColumns(QString::fromStdString(lab_csv.str())), withoutMeasuredColumns(readAll(csv)));
            preset_steps_[p] = withoutMeasuredColumns(readAll(csv));
            QCOMPARE(qint64(d.steps().size()), bench.value("steps").toInteger());
            QCOMPARE(d.figures().steps, bench.value("steps").toInteger());
            QCOMPARE(d.figures().generated_tokens, bench.value("generated_tokens").toInteger());
            QCOMPARE(d.generatedTokens(), bench.value("generated_tokens").toInteger());
            QCOMPARE(d.figures().padding_share, bench.value("padding_share").toDouble());
            QCOMPARE(d.figures().mean_batch_rows, bench.value("mean_batch_rows").toDouble());
            QCOMPARE(d.figures().peak_kv_bytes, bench.value("peak_kv_bytes").toInteger());
            QCOMPARE(d.figures().failed_requests, 0);
        }
        // The two policies batch differently: static waits for its batch to drain.
        QVERIFY(runner->data(0).steps().size() != runner->data(1).steps().size());
        QVERIFY(runner->data(1).figures().mean_batch_rows < runner->data(0).figures().mean_batch_rows);
        // The summary shows the engine library's figures, formatted.
        const LabSummaryModel* summary = lab()->summary();
        QCOMPARE(summary->rowCount(), 2);
        for (int p = 0; p < 2; ++p)
            QCOMPARE(summary->data(summary->index(p, LabSummaryModel::Steps)).toString(),
                     QString::number(runner->data(p).figures().steps));
    }

    // The policy editor's third batching choice is the packed queue, both ways: a policy with
    // QueueOrder::Pack shows it, the choice gives it (and the CLI bench of the lab's runs passes it
    // on as --queue-order pack, lab_e2e_support.h); continuous and static stay first come first served.
    void aPackedQueueRoundTripsThroughThePolicyEditor() {
        LabPolicyEditor* editor = lab()->policyEditor();
        const EngineOptions before = editor->apply(0, EngineOptions());
        EngineOptions packed = before;
        packed.static_batching = false;
        packed.queue_order = QueueOrder::Pack;
        editor->setPolicy(0, packed);
        QCOMPARE(editor->apply(0, EngineOptions()).queue_order, QueueOrder::Pack);
        QVERIFY(!editor->apply(0, EngineOptions()).static_batching);
        QVERIFY2(editor->describe(0).startsWith(QStringLiteral("continuous, packed,")), qPrintable(editor->describe(0)));
        editor->setPolicy(0, before);
        QCOMPARE(editor->apply(0, EngineOptions()).queue_order, QueueOrder::Arrival);
        QCOMPARE(editor->apply(1, EngineOptions()).queue_order, QueueOrder::Arrival);
    }

    // End-to-end latency and goodput, set after the run: the lab's figures, its summary and its
    // end-to-end CDF are what its exported requests CSV gives under bench's definitions
    // (recomputed here from the records), and its tokens are the steps CSV's decoded rows.
    void latencyAndGoodputAreTheRequestsCsv() {
        const LabRunner* runner = lab()->runner();
        QVERIFY(runner->policyCount() == 2 && runner->data(0).hasFigures());
        // Targets inside A's spread (to the form's 0.1 ms), so that goodput counts some, not all.
        std::vector<double> tpot;
        for (const auto& [id, t] : runner->data(0).timings()) tpot.push_back(t.tpot_ms());
        LatencyTargets targets;
        targets.ttft_ms = std::round(percentile(runner->data(0).ttftMs(), 75) * 10) / 10;
        targets.tpot_ms = std::round(percentile(tpot, 75) * 10) / 10;
        lab()->goodputForm()->setTargets(targets);
        QCOMPARE(runner->goodputTargets().ttft_ms, targets.ttft_ms);
        QTemporaryDir out;
        QString error;
        lab()->exportTo(out.path(), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const LabSummaryModel* summary = lab()->summary();
        for (int p = 0; p < 2; ++p) {
            const QChar name('A' + p);
            const auto requests = test::readCsv(out.filePath(QStringLiteral("lab-requests-%1.csv").arg(name)));
            const auto steps = test::readCsv(out.filePath(QStringLiteral("lab-steps-%1.csv").arg(name)));
            const BenchFigures& f = runner->data(p).figures();
            QCOMPARE(qint64(requests.size()), f.requests);
            std::vector<double> e2e, queue, ttft;
            int64_t good = 0, tokens = 0, decoded = 0;
            for (const auto& r : requests) {
                e2e.push_back(test::csvNumber(r, "e2e_ms"));
                ttft.push_back(test::csvNumber(r, "ttft_ms"));
                queue.push_back(test::csvNumber(r, "queue_ms"));
                tokens += r.at(QStringLiteral("tokens")).toLongLong();
                good += r.at(QStringLiteral("reason")) != QLatin1String("error") && test::csvNumber(r, "ttft_ms") <= targets.ttft_ms &&
                        test::csvNumber(r, "tpot_ms") <= targets.tpot_ms;
            }
            for (const auto& s : steps) decoded += s.at(QStringLiteral("decode_tokens")).toLongLong();
            QCOMPARE(tokens, f.generated_tokens);
            QCOMPARE(decoded, f.generated_tokens);
            QCOMPARE(f.goodput_requests, good);
            QVERIFY(test::sameNumber(f.goodput_share, double(good) / double(requests.size())));
            const std::pair<double, double> e2e_figures[] = {{f.e2e_p50_ms, 50}, {f.e2e_p95_ms, 95}, {f.e2e_p99_ms, 99}};
            for (const auto& [figure, q] : e2e_figures) QVERIFY2(test::sameNumber(figure, percentile(e2e, q)), qPrintable(QString::number(q)));
            QVERIFY(test::sameNumber(f.queue_p95_ms, percentile(queue, 95)));
            auto shown = [&](int column) { return summary->data(summary->index(p, column)).toString(); };
            QCOMPARE(shown(LabSummaryModel::E2eP50), QString::number(percentile(e2e, 50), 'f', 1));
            QCOMPARE(shown(LabSummaryModel::E2eP99), QString::number(percentile(e2e, 99), 'f', 1));
            QVERIFY(test::sameNumber(f.ttft_mean_ms, test::meanOf(ttft)));
            QVERIFY(test::sameNumber(f.e2e_mean_ms, test::meanOf(e2e)));
            QCOMPARE(shown(LabSummaryModel::TtftMean), QString::number(f.ttft_mean_ms, 'f', 1));
            QCOMPARE(shown(LabSummaryModel::E2eMean), QString::number(f.e2e_mean_ms, 'f', 1));
            QCOMPARE(shown(LabSummaryModel::Goodput), QString::number(100.0 * double(good) / double(requests.size()), 'f', 1));
            QCOMPARE(shown(LabSummaryModel::GoodputRequests), QString::number(good));
            // The CDF ends at the slowest request, at 100 %.
            const auto* cdf = qobject_cast<QXYSeries*>(lab()->latencyCharts()->chart(0)->series().value(p));
            QVERIFY(cdf);
            QCOMPARE(qint64(cdf->count()), qint64(requests.size()));
            QVERIFY(test::sameNumber(cdf->points().back().x(), *std::max_element(e2e.begin(), e2e.end())));
            QCOMPARE(cdf->points().back().y(), 100.0);
            if (p == 0) QVERIFY2(good > 0 && good < int64_t(requests.size()), qPrintable(QString::number(good)));
        }
        const QString md = readAll(out.filePath(QStringLiteral("lab-report.md")));
        QVERIFY(md.contains(QStringLiteral("TTFT %1 ms").arg(targets.ttft_ms)));
        lab()->goodputForm()->setTargets({});
        QCOMPARE(runner->data(0).figures().goodput_requests, runner->data(0).figures().requests);
    }

    void timelineCellsAreTheStepStream() {
        const LabRunner* runner = lab()->runner();
        QVERIFY(runner->policyCount() == 2 && runner->data(0).hasFigures());
        for (int p = 0; p < 2; ++p) {
            const LabRunData& d = runner->data(p);
            int cells = 0;
            for (int s = 0; s < int(d.steps().size()); ++s) {
                const StepStats& st = d.steps()[size_t(s)];
                QCOMPARE(int64_t(st.row_requests.size()), st.rows);
                for (int row = 0; row < d.rows(); ++row) {
                    const int index = d.cellAt(s, row);
                    if (row >= int(st.row_requests.size())) {
                        QCOMPARE(index, -1);
                        continue;
                    }
                    QVERIFY(index >= 0);
                    QCOMPARE(d.requests()[size_t(index)].id, st.row_requests[size_t(row)]);
                    QCOMPARE(d.joinedAt(s, row), bool(st.row_prefill[size_t(row)]));
                    ++cells;
                }
            }
            QVERIFY(cells > 0);
            // Every request held rows and finished; its rows span the steps the stream gives it.
            for (const LabRequest& r : d.requests()) {
                QCOMPARE(r.state, LabRequestState::Finished);
                QVERIFY(r.first_step >= 0 && r.last_step >= r.first_step);
                QCOMPARE(r.generated, r.max_new_tokens);   // eos ignored: exactly the drawn length
            }
        }
        // Hovering a cell names its request; clicking selects it on the lab's request board.
        LabTimelineWidget* timeline = lab()->timeline(0);
        timeline->fit();
        QApplication::processEvents();
        QPoint hit;
        for (int y = 0; y < timeline->height() && hit.isNull(); y += 2)
            for (int x = 0; x < timeline->width() && hit.isNull(); x += 3)
                if (timeline->hitAt({x, y}).request >= 0) hit = {x, y};
        QVERIFY(!hit.isNull());
        const int index = timeline->hitAt(hit).request;
        QVERIFY(timeline->describeAt(hit).contains(QStringLiteral("request %1 ").arg(index)));
        QTest::mouseClick(timeline, Qt::LeftButton, {}, hit);
        const QModelIndexList selected = lab()->requestTable()->selectionModel()->selectedRows();
        QCOMPARE(selected.size(), 1);
        QCOMPARE(selected.front().row(), index);
        // Zoom and pan keep the view inside the run.
        const double spp = timeline->stepsPerPixel();
        timeline->zoom(4.0, timeline->width() / 2);
        QVERIFY(timeline->stepsPerPixel() < spp);
        timeline->panSteps(1e6);
        QVERIFY(timeline->firstStep() < double(runner->data(0).steps().size()));
    }

    void exportReadsBack() {
        QTemporaryDir out;
        QString error;
        const QStringList files = lab()->exportTo(out.path(), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(files.size(), 6);   // charts PNG, steps and requests CSVs of A and B, the report
        for (int p = 0; p < 2; ++p) {
            std::ostringstream csv;
            write_steps_csv(csv, lab()->runner()->data(p).steps());
            QCOMPARE(readAll(out.filePath(QStringLiteral("lab-steps-%1.csv").arg(QChar('A' + p)))), QString::fromStdString(csv.str()));
        }
        const QString md = readAll(out.filePath(QStringLiteral("lab-report.md")));
        QVERIFY(md.contains(QStringLiteral("| Steps | %1 | %2 |").arg(lab()->runner()->data(0).figures().steps)
                                .arg(lab()->runner()->data(1).figures().steps)));
        QVERIFY(md.contains(QStringLiteral("\"synthetic\"")));
        QVERIFY(md.contains(QStringLiteral("lab-charts.png")));
        const QImage charts(out.filePath(QStringLiteral("lab-charts.png")));
        QVERIFY(!charts.isNull());
        QVERIFY(pixelVariance(charts) > 100);
    }

    void screenshotIsNotBlank() {
        QTemporaryDir out;
        QString error;
        const QStringList files = renderLabScreenshots(*demo_.window, out.path(), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(files.size(), 2);
        for (const QString& f : files) {
            QVERIFY(QFileInfo(f).fileName().contains(QLatin1String("lab")));
            const QImage image(f);
            QVERIFY2(!image.isNull(), qPrintable(f));
            QVERIFY2(pixelVariance(image) > 100, qPrintable(f));
        }
        QCOMPARE(QImage(files.front()).size(), QSize(1280, 800));   // the lab fits the default window
    }

    // Paused, the run holds before its first step; Step lets exactly one through; paced, it
    // decides the same steps as at full speed (pace changes when, never what).
    void pauseHoldsStepReleasesAndPaceKeepsTheSteps() {
        QVERIFY(!preset_steps_[0].isEmpty());
        lab()->usePreset();
        lab()->setMinStepMs(0);
        QTest::mouseClick(lab()->pauseButton(), Qt::LeftButton);
        QVERIFY(lab()->pauseButton()->isChecked() && lab()->stepButton()->isEnabled());
        QVERIFY(lab()->run());
        const LabRunner* runner = lab()->runner();
        auto submitted = [&] {
            for (const LabRequest& r : runner->data(0).requests())
                if (r.id == 0) return false;
            return true;
        };
        QTRY_VERIFY_WITH_TIMEOUT(submitted(), 60000);
        QTest::qWait(300);
        lab()->runner()->drainNow();
        QCOMPARE(int(runner->data(0).steps().size()), 0);
        QTest::mouseClick(lab()->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(int(runner->data(0).steps().size()), 1, 10000);
        QTest::qWait(300);
        lab()->runner()->drainNow();
        QCOMPARE(int(runner->data(0).steps().size()), 1);
        lab()->setMinStepMs(15);
        QTest::mouseClick(lab()->pauseButton(), Qt::LeftButton);   // resume, paced
        QVERIFY(!lab()->pauseButton()->isChecked());
        QElapsedTimer clock;
        clock.start();
        while (runner->isRunning() && clock.elapsed() < 240000) QTest::qWait(20);
        QVERIFY(!runner->isRunning());
        lab()->setMinStepMs(0);
        for (int p = 0; p < 2; ++p) {
            std::ostringstream csv;
            write_steps_csv(csv, runner->data(p).steps());
            QCOMPARE(withoutMeasuredColumns(QString::fromStdString(csv.str())), preset_steps_[p]);
        }
    }

    // Cancel ends the run at once (what has not finished shows as cancelled); the next run starts
    // afresh and decides the same steps as before.
    void cancelEndsTheRunAndTheNextRunsAfresh() {
        lab()->usePreset();
        lab()->setMinStepMs(40);
        QVERIFY(lab()->run());
        const LabRunner* runner = lab()->runner();
        QTRY_VERIFY_WITH_TIMEOUT(runner->data(0).steps().size() >= 3, 60000);
        QVERIFY(runner->isRunning());
        QTest::mouseClick(lab()->cancelButton(), Qt::LeftButton);
        QVERIFY(!runner->isRunning());
        const LabRunData& a = runner->data(0);
        QVERIFY(int(a.steps().size()) < preset_steps_[0].size() - 1);
        int cancelled = 0;
        for (const LabRequest& r : a.requests()) {
            QVERIFY(r.state == LabRequestState::Finished || r.state == LabRequestState::Cancelled);
            cancelled += r.state == LabRequestState::Cancelled;
        }
        QVERIFY(cancelled > 0);
        for (const LabRequest& r : runner->data(1).requests()) QCOMPARE(r.state, LabRequestState::Cancelled);
        lab()->setMinStepMs(0);
        QVERIFY(runAndWait(240000));
        for (int p = 0; p < 2; ++p) {
            std::ostringstream csv;
            write_steps_csv(csv, runner->data(p).steps());
            QCOMPARE(withoutMeasuredColumns(QString::fromStdString(csv.str())), preset_steps_[p]);
        }
    }

    void fiveHundredRequestsKeepTheEventLoopTurning() {
        Workload w = LabWorkloadForm::preset({});
        w.synthetic->count = 500;
        w.synthetic->seed = 11;
        lab()->workloadForm()->setWorkload(w);
        EngineOptions a;
        a.max_batch_size = 4;
        EngineOptions b = a;
        b.static_batching = true;
        lab()->policyEditor()->setPolicy(0, a);
        lab()->policyEditor()->setPolicy(1, b);
        test::EventLoopProbe probe;
        QVERIFY(runAndWait(480000));
        probe.stop();
        for (int p = 0; p < 2; ++p) {
            QCOMPARE(int(lab()->runner()->data(p).requests().size()), 500);
            QCOMPARE(lab()->runner()->data(p).finishedCount(), 500);
        }
        qInfo("500 requests: %d and %d steps, worst GUI-thread busy stretch %.1f ms CPU (wall-clock gap %lld ms) "
              "over %lld ms",
              int(lab()->runner()->data(0).steps().size()), int(lab()->runner()->data(1).steps().size()),
              probe.worst_busy_ms(), probe.worst_wall_gap_ms(), probe.elapsed_ms());
        // Measured on a quiet Xeon: 20-25 ms since the request table hears of changed rows only and
        // the charts redraw one per turn (before: 96-105 ms, 121 under CI's load). CPU time grows
        // little with load (1.15x there), so 60 keeps a margin of more than 2x and still catches a
        // return of either whole-run redraw.
        QVERIFY2(probe.worst_busy_ms() <= 60, qPrintable(QStringLiteral("worst busy stretch %1 ms").arg(probe.worst_busy_ms())));
    }

    // Found on the way: at the default 1280 x 800 the comparison view shows all four demo columns
    // (base and three adapters) without scrolling, and the adapters dock shows the Targets column.
    void comparisonAndAdaptersFitTheDefaultWindow() {
        demo_.window->resize(1280, 800);
        auto* params = demo_.window->findChild<QDockWidget*>(QStringLiteral("paramsDock"));
        QVERIFY(params);
        params->show();   // the lab hid it; the comparison must fit beside it
        demo_.window->composer()->setText(QStringLiteral("queen wolf kite goat sun"));
        QStringList targets{QString()};
        for (const auto& a : demo_.window->bridge()->adapters()) targets << QString::fromStdString(a.name);
        demo_.window->composer()->setSelectedTargets(targets);
        QVERIFY(demo_.window->compareTargets() > 0);
        QTRY_COMPARE_WITH_TIMEOUT(demo_.window->requestModel()->unfinishedCount(), 0, 60000);
        demo_.window->showTab(MainWindow::Tab::Compare);
        QApplication::processEvents();
        QCOMPARE(demo_.window->comparisonView()->columnCount(), 4);
        QScrollArea* columns = nullptr;
        for (auto* area : demo_.window->comparisonView()->findChildren<QScrollArea*>())
            if (area->accessibleName() == QLatin1String("Comparison columns")) columns = area;
        QVERIFY(columns);
        QTRY_VERIFY(columns->isVisible());
        QCOMPARE(columns->horizontalScrollBar()->maximum(), 0);
        QTableView* adapters = demo_.window->adaptersPanel()->view();
        QCOMPARE(adapters->horizontalHeader()->visualIndex(AdapterListModel::ColTargets), 1);
        const int right = adapters->columnViewportPosition(AdapterListModel::ColTargets) + adapters->columnWidth(AdapterListModel::ColTargets);
        QVERIFY2(right <= adapters->viewport()->width(), qPrintable(QStringLiteral("Targets ends at %1 of %2 px").arg(right).arg(adapters->viewport()->width())));
        for (int row = 0; row < adapters->model()->rowCount(); ++row) {
            const QString text = adapters->model()->index(row, AdapterListModel::ColTargets).data().toString();
            QVERIFY2(adapters->fontMetrics().horizontalAdvance(text) < adapters->columnWidth(AdapterListModel::ColTargets), qPrintable(text));
        }
        demo_.window->focusLab();
    }

    // Found on the way: the load reports tensors read of the checkpoint's, and the progress
    // callback's "stop" ends it there (the bridge's Cancel), with a Cancelled error.
    void loadReportsProgressAndCanBeStopped() {
        EngineOptions o;
        o.model_dir = demo_.model.dir;
        o.threads = 1;
        int calls = 0;
        int64_t read = 0, total = 0;
        o.load_progress = [&](int64_t r, int64_t t) {
            ++calls;
            read = r;
            total = t;
            return r < 3;
        };
        try {
            Engine::create(o);
            QFAIL("the load went on after the progress callback said stop");
        } catch (const Error& e) {
            QCOMPARE(e.kind(), ErrorKind::Cancelled);
            QVERIFY2(QString::fromStdString(e.what()).contains(QString::fromStdString(demo_.model.dir)), e.what());
        }
        QCOMPARE(calls, 3);
        QCOMPARE(read, int64_t(3));
        calls = 0;
        bool counting_up = true;   // once per tensor: 1, 2, 3, ...
        o.load_progress = [&](int64_t r, int64_t t) {
            counting_up = counting_up && r == ++calls;
            read = r;
            total = t;
            return true;
        };
        QVERIFY(Engine::create(o) != nullptr);
        QVERIFY(counting_up);
        QVERIFY(read > 3 && read <= total);
    }

    void cleanupTestCase() { demo_.window.reset(); }
};

QTEST_MAIN(LabRealEngineTest)
#include "test_lab_real_engine.moc"
