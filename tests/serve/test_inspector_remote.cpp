// The batching inspector over a remote backend: the real window, loaded from a real
// `lorascope-cli serve --demo` (with its API token), polls the server's /metrics while requests
// run and charts what it publishes (batch size, queue length, step durations) as server-side
// aggregates, next to the per-request timings the window measured. A wrong token, a server that
// never answers and a server that went away are each a labelled state, not a dialog, with the
// polling backing off and the window responsive. The window is rendered to batching.png
// (into $LORASCOPE_SCREENSHOT_DIR when set: docs/screenshots/remote-batching.png comes from it).
#include <QApplication>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "inspector/batching_inspector.h"
#include "shell/error_reporter.h"
#include "recording_reporter.h"
#include "event_loop_probe.h"
#include "image_checks.h"
#include "shell/main_window.h"
#include "remote/metrics_poller.h"
#include "model/model_panel.h"
#include "requests/prompt_composer.h"
#include "remote/remote_backend.h"
#include "requests/request_table_model.h"
#include "shell/screenshot.h"
#include "serve_process.h"
#include "remote/server_metrics.h"
#include "inspector/server_metrics_view.h"
#include "window_actions.h"

using namespace lorascope;
using namespace lorascope::ui;
using nlohmann::json;
using lorascope::test::q;

namespace {

const std::string kToken = "inspector-tok-5d21";
constexpr int kMaxBatch = 4;
constexpr int kNewTokens = 1500;

double max_of(const ServerMetricsModel& m, int column) {
    double best = -1;
    for (const auto& p : m.points())
        if (const auto v = ServerMetricsModel::pointValue(p, column)) best = std::max(best, *v);
    return best;
}

}  // namespace

class TestInspectorRemote : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    test::Server server_;
    std::shared_ptr<test::RecordingReporter> reporter_ = std::make_shared<test::RecordingReporter>();
    int windows_ = 0;

    std::unique_ptr<MainWindow> makeWindow() {
        MainWindowOptions o;
        o.engine_factory = [](const EngineOptions& e) {
            return createEngineForLocation(e, [](const EngineOptions&) -> std::unique_ptr<Engine> {
                throw std::runtime_error("this test loads servers only");
            });
        };
        o.error_reporter = reporter_;
        o.settings_file = dir_.filePath(QStringLiteral("settings-%1.ini").arg(++windows_));
        auto w = std::make_unique<MainWindow>(std::move(o));
        w->resize(1280, 800);
        w->show();
        return w;
    }

    bool loadServer(MainWindow& w) {
        for (auto* edit : w.modelPanel()->findChildren<QLineEdit*>())
            if (edit->accessibleName() == QLatin1String("Server API token")) edit->setText(q(kToken));
        return test::load_through_panel(w, q(server_.url), 60000);
    }

    QString writePrompts(int n, int max_new_tokens) {
        static const char* const adapters[] = {"", "upper", "reverse", "sort"};
        QByteArray text;
        for (int i = 0; i < n; ++i) {
            json l = {{"id", "r" + std::to_string(i)},
                      {"prompt", "queen wolf kite goat sun"},
                      {"params", {{"max_new_tokens", max_new_tokens}, {"do_sample", false}, {"ignore_eos", true}}}};
            if (*adapters[i % 4]) l["adapter"] = adapters[i % 4];
            text += QByteArray::fromStdString(l.dump() + "\n");
        }
        const QString path = dir_.filePath(QStringLiteral("prompts-%1.jsonl").arg(n));
        QFile f(path);
        f.open(QIODevice::WriteOnly);
        f.write(text);
        return path;
    }

private Q_SLOTS:
    void initTestCase() {
        // Four rows at most, so that some of the eight requests wait in the server's queue. One
        // thread: on this shared two-core machine two OpenMP threads stall each other's steps
        // whenever another process runs (measured: 100 ms a step instead of 0.5 ms).
        QVERIFY2(server_.start({"--api-token", q(kToken), "--max-batch-size", QString::number(kMaxBatch), "--threads", "1"}),
                 ("the server did not start: " + server_.process.readAllStandardError().toStdString()).c_str());
    }

    void inspectorChartsTheServersAggregatesDuringARun() {
        auto w = makeWindow();
        QVERIFY(loadServer(*w));
        BatchingInspector* inspector = w->batchingInspector();
        ServerMetricsModel* metrics = w->serverMetrics();
        QVERIFY(inspector->showsServer());
        QVERIFY(!inspector->pauseButton()->isEnabled());   // a shared server is not ours to pause
        w->metricsPoller()->setIntervalMs(200);
        w->showTab(MainWindow::Tab::Batching);
        QTRY_COMPARE_WITH_TIMEOUT(metrics->state(), ServerMetricsModel::State::Live, 10000);
        QCOMPARE(metrics->flavor(), ServerFlavor::Lorax);

        // Eight requests at once over the base and three adapters, long enough for many polls.
        w->composer()->loadFile(writePrompts(8, kNewTokens));
        QSignalSpy all(w->requestModel(), &RequestTableModel::allFinished);
        test::EventLoopProbe probe;
        QCOMPARE(w->submitPrompts().size(), size_t(8));
        QVERIFY(all.wait(180000));
        const int polls_at_end = metrics->polls();
        QTRY_VERIFY_WITH_TIMEOUT(metrics->polls() >= polls_at_end + 2, 10000);   // the idle server after the run
        probe.stop();

        // Real values from the server: the requests shared its batch and queued for it, its steps
        // took time, its cache filled, its finished requests produced tokens, and it is idle again.
        const double batch = max_of(*metrics, ServerMetricsModel::ColBatch);
        QVERIFY2(batch >= 2, qPrintable(QStringLiteral("largest server batch %1 over %2 polls").arg(batch).arg(metrics->polls())));
        QVERIFY2(batch <= kMaxBatch, qPrintable(QString::number(batch)));
        // All eight stream at once (the remote backend is not capped by Qt Network's six
        // connections per manager): the four that do not fit the batch wait in the server's queue.
        QVERIFY2(max_of(*metrics, ServerMetricsModel::ColQueue) >= 3, "the server's queue never held the rest");
        QVERIFY(max_of(*metrics, ServerMetricsModel::ColDecodeMs) > 0);
        QVERIFY(max_of(*metrics, ServerMetricsModel::ColTokensPerSec) > 0);
        QVERIFY(max_of(*metrics, ServerMetricsModel::ColStepsPerSec) > 0);
        QVERIFY(max_of(*metrics, ServerMetricsModel::ColKvPercent) > 0);
        QCOMPARE(*metrics->points().back().batch, 0.0);
        QCOMPARE(*metrics->points().back().kv_percent, 0.0);
        QCOMPARE(metrics->state(), ServerMetricsModel::State::Live);

        ServerMetricsView* view = inspector->serverView();
        QVERIFY(view->isVisible());
        QVERIFY(view->pointCount(0) > 3);   // the batch size chart plots the polls
        QVERIFY(view->pointCount(2, 1) > 0);   // decode step means
        const QString title = view->titleLabel()->text();
        QVERIFY2(title.contains(QLatin1String("Server-side aggregates")) && title.contains(QLatin1String("polled from")) &&
                     title.contains(QLatin1String("/metrics")) && title.contains(QLatin1String("0.2 s")) &&
                     title.contains(QLatin1String("Not per-step engine data")),
                 qPrintable(title));
        QVERIFY2(!title.contains(q(kToken)), "the token is shown");
        QVERIFY2(view->stateLabel()->text().contains(QLatin1String("Live: LoRAX metrics")), qPrintable(view->stateLabel()->text()));
        const QString client = view->clientLabel()->text();
        QVERIFY2(client.contains(QLatin1String("Measured by this window")) && client.contains(QLatin1String("8 finished")) &&
                     !client.contains(QLatin1String("p50 – ms")),
                 qPrintable(client));
        QVERIFY2(probe.worst_busy_ms() < 1500, qPrintable(QString::number(probe.worst_busy_ms())));
        QVERIFY2(reporter_->reports.isEmpty(), qPrintable(reporter_->reports.join('\n')));

        QTemporaryDir shots;
        const QString out = qEnvironmentVariableIsSet("LORASCOPE_SCREENSHOT_DIR") ? qEnvironmentVariable("LORASCOPE_SCREENSHOT_DIR")
                                                                                 : shots.path();
        QString error;
        const QStringList files = renderScreenshots(*w, out, &error);
        QVERIFY2(files.size() == 3, qPrintable(error));
        const auto spread = test::pixel_spread(QImage(QDir(out).filePath(QStringLiteral("batching.png"))));
        QVERIFY2(spread.colours >= 16 && spread.luma_stddev > 10, "batching.png looks blank");
    }

    void wrongTokenAndSilentServerAreLabelledStatesWithBackoff() {
        ServerMetricsModel m;
        MetricsPoller poller(&m);
        poller.setIntervalMs(100);
        poller.start(QUrl(q(server_.url)), QStringLiteral("not-the-token-41"));
        QTRY_VERIFY_WITH_TIMEOUT(m.failures() >= 3, 15000);
        QCOMPARE(m.state(), ServerMetricsModel::State::HttpError);
        QVERIFY2(m.message().contains(QLatin1String("HTTP 401 (authentication)")), qPrintable(m.message()));
        QVERIFY(!m.message().contains(QLatin1String("not-the-token-41")));
        QVERIFY2(poller.nextDelayMs() >= 800, qPrintable(QString::number(poller.nextDelayMs())));   // 100 ms doubled per failure
        RequestTableModel requests;
        ServerMetricsView view(&m, &requests);
        QVERIFY2(view.stateLabel()->text().contains(QLatin1String("/metrics refused: HTTP 401")),
                 qPrintable(view.stateLabel()->text()));
        QVERIFY(!view.stateLabel()->text().contains(QLatin1String("not-the-token-41")));
        poller.start(QUrl(q(server_.url)), q(kToken));   // the right token: live, back to the interval
        QTRY_COMPARE_WITH_TIMEOUT(m.state(), ServerMetricsModel::State::Live, 10000);
        QCOMPARE(poller.nextDelayMs(), 100);

        // A server that accepts the connection and never answers: a timeout, and the loop turns.
        QTcpServer silent;
        QVERIFY(silent.listen(QHostAddress::LocalHost));
        std::vector<QTcpSocket*> held;
        connect(&silent, &QTcpServer::newConnection, this, [&] {
            while (QTcpSocket* s = silent.nextPendingConnection()) held.push_back(s);
        });
        poller.setTimeoutMs(300);
        test::EventLoopProbe probe;
        poller.start(QUrl(QStringLiteral("http://127.0.0.1:%1").arg(silent.serverPort())), {});
        QTRY_COMPARE_WITH_TIMEOUT(m.state(), ServerMetricsModel::State::Unreachable, 5000);
        QVERIFY2(m.message().contains(QLatin1String("timeout")), qPrintable(m.message()));
        QVERIFY2(probe.worst_busy_ms() < 250, qPrintable(QString::number(probe.worst_busy_ms())));
        poller.stop();
        QCOMPARE(m.state(), ServerMetricsModel::State::Stopped);
    }

    void aServerThatWentAwayIsLabelledAndTheWindowStaysResponsive() {
        auto w = makeWindow();
        QVERIFY(loadServer(*w));
        ServerMetricsModel* metrics = w->serverMetrics();
        w->metricsPoller()->setIntervalMs(100);
        w->showTab(MainWindow::Tab::Batching);
        QTRY_COMPARE_WITH_TIMEOUT(metrics->state(), ServerMetricsModel::State::Live, 10000);
        const int points = metrics->rowCount();
        QCOMPARE(server_.stop(), 0);
        test::EventLoopProbe probe;
        QTRY_COMPARE_WITH_TIMEOUT(metrics->state(), ServerMetricsModel::State::Unreachable, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(metrics->failures() >= 3, 10000);
        const QString label = w->batchingInspector()->serverView()->stateLabel()->text();
        QVERIFY2(label.contains(QLatin1String("/metrics unreachable")) && label.contains(QLatin1String("backing off")),
                 qPrintable(label));
        QVERIFY2(w->metricsPoller()->nextDelayMs() >= 800, qPrintable(QString::number(w->metricsPoller()->nextDelayMs())));
        QVERIFY(metrics->rowCount() >= points);   // what was polled before stays charted
        QVERIFY2(probe.worst_busy_ms() < 250, qPrintable(QString::number(probe.worst_busy_ms())));
        QVERIFY2(reporter_->reports.isEmpty(), qPrintable(reporter_->reports.join('\n')));   // no dialog
    }
};

QTEST_MAIN(TestInspectorRemote)
#include "test_inspector_remote.moc"
