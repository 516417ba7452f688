#include "shell/screenshot_run.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <cstdio>

#include "engine_link/engine_bridge.h"
#include "lab/lab_runner.h"
#include "lab/lab_view.h"
#include "model/adapter_list_model.h"
#include "requests/prompt_composer.h"
#include "requests/request_table_model.h"
#include "shell/launch.h"
#include "shell/main_window.h"
#include "shell/screenshot.h"

namespace lorascope::ui {

namespace {

// Runs the event loop until `done` or the timeout; returns done(). Only a bound on how long the
// screenshots wait for a stuck model, never a measurement.
template <typename Done>
bool spinUntil(Done done, int timeout_ms) {
    QElapsedTimer clock;
    clock.start();
    while (!done() && clock.elapsed() < timeout_ms) {
        QEventLoop loop;
        QTimer::singleShot(20, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return done();
}

// Adds the adapters and waits for them; false when one did not load. Returns the targets ("" first).
bool addAdapters(MainWindow& window, const QStringList& dirs, QStringList* targets) {
    bool ok = true;
    for (const QString& dir : dirs) window.addAdapter(dir);
    spinUntil([&] {
        for (const auto& e : window.adapterModel()->entries())
            if (e.state == AdapterListModel::State::Loading) return false;
        return true;
    }, 60000);
    for (const auto& e : window.adapterModel()->entries()) {
        if (e.state == AdapterListModel::State::Ready) continue;
        std::fprintf(stderr, "lorascope: adapter %s: %s\n", qPrintable(e.path),
                     qPrintable(e.error.isEmpty() ? QStringLiteral("did not finish loading") : e.error));
        ok = false;
    }
    *targets = QStringList{QString()};
    for (const auto& a : window.bridge()->adapters()) *targets << QString::fromStdString(a.name);
    return ok;
}

// The demo's examples compared across every target, then all of them on all targets, so that the
// request board and the inspector show a full batch; or one prompt compared (or submitted).
bool sendPromptsAndWait(MainWindow& window, const LaunchOptions& o, const QStringList& targets) {
    window.composer()->setAdapters(targets.mid(1));
    window.composer()->setSelectedTargets(targets);
    if (!o.demo_prompts.isEmpty() && !o.prompt) {
        window.composer()->setPrompts(o.demo_prompts);
        if (targets.size() > 1) window.compareTargets();
        window.submitPrompts();
    } else {
        window.composer()->setText(o.prompt.value_or(QStringLiteral("translate English to German: The house is wonderful.")));
        if (targets.size() > 1) window.compareTargets();
        else window.submitPrompts();
    }
    spinUntil([&] { return window.requestModel()->unfinishedCount() == 0; }, 120000);
    bool ok = true;
    for (const auto& r : window.requestModel()->records()) {
        if (r.status != RequestStatus::Failed) continue;
        std::fprintf(stderr, "lorascope: request %s failed: %s\n", qPrintable(r.client_id), qPrintable(r.error));
        ok = false;
    }
    return ok;
}

// Loads the model and adapters and streams the prompts; false when anything failed.
bool prepareViews(MainWindow& window, const LaunchOptions& o) {
    EngineBridge* bridge = window.bridge();
    bool failed = false;
    QObject::connect(bridge, &EngineBridge::loadFailed, [&](const QString&, const QString& message) {
        std::fprintf(stderr, "lorascope: %s\n", qPrintable(message));
        failed = true;
    });
    window.loadModel(o.model_dir);
    spinUntil([&] { return failed || bridge->hasEngine(); }, 300000);
    if (!bridge->hasEngine()) {
        if (!failed) std::fprintf(stderr, "lorascope: %s: the model did not finish loading\n", qPrintable(o.model_dir));
        return false;
    }
    QStringList targets;
    const bool adapters_ok = addAdapters(window, o.adapter_dirs, &targets);
    return sendPromptsAndWait(window, o, targets) && adapters_ok;
}

// The lab's preset at full speed under its two policies; false when a policy did not finish.
bool runLab(MainWindow& window) {
    LabView* view = window.labView();
    view->usePreset();
    view->setMinStepMs(0);
    if (!view->run()) return false;
    spinUntil([&] { return !view->runner()->isRunning(); }, 300000);
    bool ok = true;
    for (int i = 0; i < view->runner()->policyCount(); ++i)
        if (view->runner()->data(i).finishedCount() < int(view->runner()->data(i).requests().size())) {
            std::fprintf(stderr, "lorascope: the lab's policy %s did not finish\n", qPrintable(view->runner()->policy(i).name));
            ok = false;
        }
    return ok;
}

}  // namespace

int runScreenshots(MainWindow& window, const LaunchOptions& o) {
    window.resize(1280, 800);
    window.show();
    bool ok = o.model_dir.isEmpty() || prepareViews(window, o);
    QString error;
    QStringList written = renderScreenshots(window, o.screenshot_dir, &error);
    if (o.lab && error.isEmpty()) {
        if (window.bridge()->hasEngine() && !runLab(window)) ok = false;
        written += renderLabScreenshots(window, o.screenshot_dir, &error);
    }
    for (const QString& path : written) std::printf("%s\n", qPrintable(path));
    if (!error.isEmpty()) {
        std::fprintf(stderr, "lorascope: %s\n", qPrintable(error));
        return 1;
    }
    return ok ? 0 : 1;
}

}  // namespace lorascope::ui
