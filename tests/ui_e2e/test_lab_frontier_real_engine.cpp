// The batching lab's frontier view (issue 33) against the real LibTorch engine on the demo pack's
// T5, offscreen: a sweep of prefill budgets on the lab's preset, with static batching as the
// reference, gives one point per setting whose figures are `lorascope-cli bench`'s with the same
// settings (requests, tokens, steps, rows and padding exact, and the whole step stream but for wall
// times), whose coordinates are what that setting's requests CSV gives (no wall-clock assertions),
// a click on a point loads its setting into a policy, and a sweep of per-token targets gives the
// bench's requests and tokens. With
// LORASCOPE_FRONTIER_PNG set it saves the window on the frontier page there (scripts/window-check's
// Xvfb recipe looks at it on a real X server).
#include <QApplication>
#include <QChart>
#include <QElapsedTimer>
#include <QScatterSeries>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <sstream>

#include "csv_rows.h"
#include "lab/lab_frontier_view.h"
#include "lab/lab_policy_editor.h"
#include "lab/lab_runner.h"
#include "lab/lab_view.h"
#include "lab/lab_workload_form.h"
#include "lab_e2e_support.h"
#include "lorascope/bench_report.h"
#include "lorascope/workload.h"
#include "recording_reporter.h"

using namespace lorascope;
using namespace lorascope::ui;

class LabFrontierRealEngineTest : public QObject {
    Q_OBJECT
    test::DemoLabWindow demo_;
    QString workload_file_;

    LabView* lab() const { return demo_.window->labView(); }
    LabFrontierView* frontier() const { return lab()->frontier(); }

    bool sweepAndWait(LabSweepKind kind, const QList<int>& values) {
        frontier()->setSweep(kind, values);
        if (!lab()->runSweep()) return false;
        QElapsedTimer clock;
        clock.start();
        while (frontier()->runner()->isRunning() && clock.elapsed() < 480000) QTest::qWait(20);
        return !frontier()->runner()->isRunning();
    }

    // The scatter series named `name` on chart `chart` (one point each).
    QScatterSeries* pointSeries(int chart, const QString& name) const {
        for (QAbstractSeries* s : frontier()->chart(chart)->series())
            if (auto* scatter = qobject_cast<QScatterSeries*>(s); scatter && scatter->name() == name) return scatter;
        return nullptr;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY2(!test::cli_path().empty(), "LORASCOPE_CLI is not set");
        QVERIFY(demo_.open());
        lab()->usePreset();
        workload_file_ = demo_.dir.filePath(QStringLiteral("preset.json"));
        std::ofstream(workload_file_.toStdString()) << workload_to_json(lab()->workloadForm()->workload());
    }

    void budgetSweepPointsAreTheBenchFigures() {
        QVERIFY(sweepAndWait(LabSweepKind::PrefillBudget, {4, 16, 64}));
        QVERIFY2(demo_.reporter->reports.isEmpty(), qPrintable(demo_.reporter->reports.join('\n')));
        const LabRunner* runner = frontier()->runner();
        const std::vector<LabFrontierView::Point> points = frontier()->points();
        QCOMPARE(int(points.size()), 4);
        QVERIFY(points[0].reference);
        QCOMPARE(points[0].name, QStringLiteral("static"));
        const EngineOptions a = lab()->policyEditor()->apply(0, EngineOptions());
        for (int i = 0; i < 4; ++i) {
            const EngineOptions& o = runner->policy(i).options;
            QCOMPARE(o.static_batching, i == 0);
            QCOMPARE(o.max_batch_size, a.max_batch_size);   // policy A's, but for the swept knob
            if (i > 0) QCOMPARE(o.prefill_budget_tokens, int64_t(QList<int>{4, 16, 64}[i - 1]));
            const LabRunData& d = runner->data(i);
            const BenchFigures& f = d.figures();
            const QString csv = demo_.dir.filePath(QStringLiteral("bench-%1.csv").arg(i));
            const QJsonObject bench = test::cliBench(workload_file_, o, csv);
            QVERIFY2(!bench.isEmpty(), "no bench report");
            std::ostringstream lab_steps, lab_requests;
            write_steps_csv(lab_steps, d.steps());
            QCOMPARE(test::withoutMeasuredColumns(QString::fromStdString(lab_steps.str())), test::withoutMeasuredColumns(test::readAll(csv)));
            QCOMPARE(f.requests, bench.value("requests").toInteger());
            QCOMPARE(f.generated_tokens, bench.value("generated_tokens").toInteger());
            QCOMPARE(f.steps, bench.value("steps").toInteger());
            QCOMPARE(f.mean_batch_rows, bench.value("mean_batch_rows").toDouble());
            QCOMPARE(f.padding_share, bench.value("padding_share").toDouble());
            // The point is the setting's figures; its latency, what its requests CSV gives.
            QCOMPARE(points[size_t(i)].tokens_per_s, f.tokens_per_s);
            QCOMPARE(points[size_t(i)].ttft_p50_ms, f.ttft_p50_ms);
            QCOMPARE(points[size_t(i)].per_token_p95_ms, f.per_token_p95_ms);
            QVERIFY(test::sameNumber(f.tokens_per_s, double(f.generated_tokens) / f.wall_s));
            write_requests_csv(lab_requests, d.timings());
            std::vector<double> ttft;
            for (const auto& r : test::parseCsv(QString::fromStdString(lab_requests.str()))) ttft.push_back(test::csvNumber(r, "ttft_ms"));
            QCOMPARE(qint64(ttft.size()), f.requests);
            QVERIFY(test::sameNumber(f.ttft_p50_ms, percentile(ttft, 50)));
            QCOMPARE(f.per_token_p95_ms, percentile(d.perTokenMs(), 95));
            // Drawn where the figures say, on both charts.
            for (int chart = 0; chart < 2; ++chart) {
                const QScatterSeries* s = pointSeries(chart, points[size_t(i)].name);
                QVERIFY2(s && s->count() == 1, qPrintable(points[size_t(i)].name));
                const QPointF want(chart == 0 ? f.ttft_p50_ms : f.per_token_p95_ms, f.tokens_per_s);
                QCOMPARE(s->at(0), want);
            }
        }
        // The settings decide differently: a larger budget admits more prompt tokens a step.
        QVERIFY(runner->data(1).steps().size() != runner->data(3).steps().size());
        QVERIFY(runner->data(0).figures().mean_batch_rows < runner->data(2).figures().mean_batch_rows);
        // A click on a point selects its setting; Load into B puts that policy in the editor.
        QScatterSeries* budget16 = pointSeries(1, QStringLiteral("budget 16"));
        QVERIFY(budget16);
        Q_EMIT budget16->clicked(budget16->at(0));
        QCOMPARE(frontier()->selectedSetting(), 2);
        QVERIFY(frontier()->loadButton(1)->isEnabled());
        QTest::mouseClick(frontier()->loadButton(1), Qt::LeftButton);
        const EngineOptions b = lab()->policyEditor()->apply(1, EngineOptions());
        QVERIFY(!b.static_batching);
        QCOMPARE(b.prefill_budget_tokens, int64_t(16));
        QCOMPARE(b.max_batch_size, a.max_batch_size);
        lab()->usePreset();   // B static again, for the next sweep's base (A) and the fit of what follows
        if (const QByteArray png = qgetenv("LORASCOPE_FRONTIER_PNG"); !png.isEmpty()) {
            QTest::qWait(300);   // a real X server: let the window draw
            QVERIFY(demo_.window->grab().save(QString::fromLocal8Bit(png), "PNG"));
            QTest::qWait(3000);   // the same view for an outside `import -window root` meanwhile
        }
    }

    // Under a per-token target the steps follow measured times; what is decided by the workload
    // (which requests, how many tokens each) is still the bench's.
    void targetSweepPointsHaveTheBenchTokens() {
        QVERIFY(sweepAndWait(LabSweepKind::TpotTarget, {50}));
        const LabRunner* runner = frontier()->runner();
        QCOMPARE(runner->policyCount(), 2);
        const EngineOptions& o = runner->policy(1).options;
        QCOMPARE(o.tpot_target_ms, 50.0);
        QCOMPARE(o.prefill_budget_tokens, kPrefillBudgetInTime);
        const QJsonObject bench = test::cliBench(workload_file_, o, demo_.dir.filePath(QStringLiteral("target.csv")));
        QVERIFY2(!bench.isEmpty(), "no bench report");
        QCOMPARE(runner->data(1).figures().requests, bench.value("requests").toInteger());
        QCOMPARE(runner->data(1).figures().generated_tokens, bench.value("generated_tokens").toInteger());
        QCOMPARE(runner->data(1).figures().failed_requests, 0);
        QCOMPARE(int(frontier()->points().size()), 2);
        QCOMPARE(frontier()->points()[1].name, QStringLiteral("target 50 ms"));
    }

    void badSweepValuesAreRefused() {
        QString error;
        QVERIFY(parseSweepValues(QStringLiteral("4, x"), &error).isEmpty());
        QVERIFY(error.contains(QStringLiteral("\"x\"")));
        QVERIFY(parseSweepValues(QStringLiteral("1 2 3 4 5 6 7 8 9"), &error).isEmpty());
        QCOMPARE(parseSweepValues(QStringLiteral(" 2,4  8 "), &error), (QList<int>{2, 4, 8}));
        frontier()->setSweep(LabSweepKind::PrefillBudget, {});
        const int before = demo_.reporter->reports.size();
        QVERIFY(!lab()->runSweep());
        QTRY_COMPARE(demo_.reporter->reports.size(), before + 1);
    }

    void cleanupTestCase() { demo_.window.reset(); }
};

QTEST_MAIN(LabFrontierRealEngineTest)
#include "test_lab_frontier_real_engine.moc"
