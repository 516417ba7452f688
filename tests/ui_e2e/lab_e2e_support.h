// Shared by the batching lab's end-to-end tests: the window on the demo pack's T5 with its
// adapters, and `lorascope-cli bench --demo` under a lab policy, so that a lab run can be held
// against the bench's figures and step stream.
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPushButton>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <functional>
#include <memory>

#include "cli_process.h"
#include "lorascope/demo_pack.h"
#include "lorascope/engine.h"
#include "model/adapter_list_model.h"
#include "model/model_panel.h"
#include "recording_reporter.h"
#include "shell/error_reporter.h"
#include "shell/main_window.h"
#include "window_actions.h"

namespace lorascope::test {

// The steps CSV without the columns that are measured rather than decided: its times (wall_ms,
// prefill_ms) and the threads each step ran on (fewer while the machine is busy: util/core_load.h).
inline QStringList withoutMeasuredColumns(const QString& csv) {
    const QStringList lines = csv.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    if (lines.isEmpty()) return {};
    const QStringList header = lines[0].split(QLatin1Char(','));
    QList<int> drop;
    for (const char* name : {"threads", "prefill_ms", "wall_ms"})   // from the right, so indices hold
        if (const int i = header.indexOf(QLatin1String(name)); i >= 0) drop << i;
    std::sort(drop.begin(), drop.end(), std::greater<int>());
    QStringList out;
    for (const QString& line : lines) {
        QStringList cells = line.split(QLatin1Char(','));
        for (int i : drop)
            if (i < cells.size()) cells.removeAt(i);
        out << cells.join(QLatin1Char(','));
    }
    return out;
}

inline QString readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// `lorascope-cli bench --demo` on the workload file under the batching options of `o`, its steps
// CSV written to `csv`; the report, or empty (and a warning) when the bench failed.
inline QJsonObject cliBench(const QString& workload, const EngineOptions& o, const QString& csv) {
    QStringList args = {QStringLiteral("bench"), QStringLiteral("--demo"), QStringLiteral("--demo-dir"),
                        QStringLiteral(LORASCOPE_TEST_DEMO_DIR), QStringLiteral("--workload"), workload,
                        QStringLiteral("--steps-csv"), csv, QStringLiteral("--max-batch-size"),
                        QString::number(o.max_batch_size), QStringLiteral("--max-batch-tokens"),
                        QString::number(o.max_batch_tokens)};
    // Absent: the budget in time (kPrefillBudgetInTime), the CLI's default as the engine's.
    if (o.prefill_budget_tokens >= 0) args << QStringLiteral("--prefill-budget") << QString::number(o.prefill_budget_tokens);
    if (o.tpot_target_ms > 0) args << QStringLiteral("--tpot-target-ms") << QString::number(o.tpot_target_ms);
    if (o.static_batching) args << QStringLiteral("--static");
    if (o.queue_order == QueueOrder::Pack) args << QStringLiteral("--queue-order") << QStringLiteral("pack");
    const CliResult r = run_cli_command(args, 240000);
    if (r.exit_code != 0) {
        qWarning("lorascope-cli bench failed (%d): %s", r.exit_code, r.err.c_str());
        return {};
    }
    return QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
}

// The window at 1280x800 with the real engine, the demo's T5 loaded on one thread and its
// adapters added, on the lab's tab; errors go to `reporter`, settings into `dir`.
struct DemoLabWindow {
    QTemporaryDir dir;
    std::shared_ptr<RecordingReporter> reporter = std::make_shared<RecordingReporter>();
    std::unique_ptr<ui::MainWindow> window;
    DemoModel model;

    // False when the model or an adapter did not load in time.
    bool open() {
        model = load_demo_pack(LORASCOPE_TEST_DEMO_DIR).model("t5");
        ui::MainWindowOptions options;
        options.engine_factory = [](const EngineOptions& o) { return Engine::create(o); };
        options.error_reporter = reporter;
        options.settings_file = dir.filePath(QStringLiteral("settings.ini"));
        window = std::make_unique<ui::MainWindow>(std::move(options));
        window->resize(1280, 800);
        window->show();
        window->modelPanel()->setThreads(1);
        if (!load_through_panel(*window, QString::fromStdString(model.dir), 120000)) return false;
        for (const auto& a : model.adapters) window->addAdapter(QString::fromStdString(a.dir));
        const int wanted = int(model.adapters.size());
        if (!QTest::qWaitFor([&] { return int(window->bridge()->adapters().size()) == wanted; }, 60000)) return false;
        if (!QTest::qWaitFor([&] { return int(window->adapterModel()->readyNames().size()) == wanted; }, 60000)) return false;
        window->focusLab();
        return true;
    }
};

}  // namespace lorascope::test
