// lorascope: the desktop workbench. `lorascope [MODEL_DIR]` opens the window (and loads the model);
// `lorascope --screenshot DIR [--model M --adapter A ... --prompt P]` renders the main window, the
// comparison view and the batching inspector to PNGs and exits (works with QT_QPA_PLATFORM=offscreen).
// `lorascope --demo [--demo-model KEY] [--demo-dir DIR]` loads the trained demo pack's model (T5 by
// default) with all its adapters and fills in its example prompts; with --screenshot it renders them
// compared across the base model and the adapters. `--lab` opens the batching lab and runs its preset
// workload (A continuous, B static), slowed to 120 ms a step so that joins and leaves can be
// watched; with --screenshot it runs at full speed and also renders lab.png and lab-charts.png.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QIcon>
#include <QMessageBox>
#include <QTimer>
#include <cstdio>
#include <memory>

#include "lorascope/demo_pack.h"
#include "lorascope/engine.h"
#include "lorascope/runtime.h"
#include "lorascope/error.h"
#include "model/adapter_list_model.h"
#include "engine_link/engine_bridge.h"
#include "lab/lab_runner.h"
#include "lab/lab_view.h"
#include "shell/main_window.h"
#include "model/model_panel.h"
#include "requests/prompt_composer.h"
#include "remote/remote_backend.h"
#include "requests/request_table_model.h"
#include "shell/screenshot.h"

namespace {

// Runs the event loop until `done` or the timeout; returns done().
template <typename Done>
bool spin_until(Done done, int timeout_ms) {
    QElapsedTimer clock;
    clock.start();
    while (!done() && clock.elapsed() < timeout_ms) {
        QEventLoop loop;
        QTimer::singleShot(20, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return done();
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Lorascope"));
    QApplication::setApplicationName(QStringLiteral("Lorascope"));
    // Lets Wayland docks and task bars match the window to lorascope.desktop and its icon.
    QGuiApplication::setDesktopFileName(QStringLiteral("lorascope"));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("lorascope")));
    QApplication::setApplicationVersion(QStringLiteral(LORASCOPE_VERSION));

    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral("Desktop workbench for T5, BART and BLOOM checkpoints and LoRA adapters"));
    cli.addHelpOption();
    cli.addVersionOption();
    cli.addPositionalArgument(QStringLiteral("model"), QStringLiteral("Hugging Face checkpoint directory to load"), QStringLiteral("[model]"));
    const QCommandLineOption screenshot({QStringLiteral("screenshot")}, QStringLiteral("Render the views to PNGs in DIR and exit"), QStringLiteral("DIR"));
    const QCommandLineOption model({QStringLiteral("model")}, QStringLiteral("Model directory"), QStringLiteral("DIR"));
    const QCommandLineOption adapter({QStringLiteral("adapter")}, QStringLiteral("LoRA adapter directory (repeatable)"), QStringLiteral("DIR"));
    const QCommandLineOption prompt({QStringLiteral("prompt")}, QStringLiteral("Prompt to compare across the adapters (with --screenshot)"), QStringLiteral("TEXT"));
    const QCommandLineOption device({QStringLiteral("device")}, QStringLiteral("cpu or cuda[:N]"), QStringLiteral("DEVICE"));
    const QCommandLineOption threads({QStringLiteral("threads")}, QStringLiteral("Compute threads (0: all cores)"), QStringLiteral("N"));
    const QCommandLineOption demo({QStringLiteral("demo")}, QStringLiteral("Load the demo pack's model with its adapters and example prompts"));
    const QCommandLineOption demo_model({QStringLiteral("demo-model")}, QStringLiteral("Demo model: t5 (default), bart or bloom"), QStringLiteral("KEY"));
    const QCommandLineOption demo_dir({QStringLiteral("demo-dir")}, QStringLiteral("Demo pack directory (default: LORASCOPE_DEMO_DIR, the installed or source-tree pack)"), QStringLiteral("DIR"));
    const QCommandLineOption lab({QStringLiteral("lab")}, QStringLiteral("Open the batching lab and run its preset workload under two policies"));
    cli.addOptions({screenshot, model, adapter, prompt, device, threads, demo, demo_model, demo_dir, lab});
    cli.process(app);

    // The demo pack stands in for --model/--adapter; its example prompts fill the composer.
    QString demo_model_dir;
    QStringList demo_adapters, demo_prompts;
    if (cli.isSet(demo)) {
        if (cli.isSet(model) || !cli.positionalArguments().isEmpty()) {
            std::fprintf(stderr, "lorascope: --demo loads the demo model: give either --demo or a model directory\n");
            return 2;
        }
        try {
            const lorascope::DemoPack pack = lorascope::load_demo_pack(cli.value(demo_dir).toStdString());
            const lorascope::DemoModel& m =
                pack.model(cli.isSet(demo_model) ? cli.value(demo_model).toStdString() : pack.default_model);
            demo_model_dir = QString::fromStdString(m.dir);
            for (const auto& a : m.adapters) demo_adapters << QString::fromStdString(a.dir);
            for (const auto& p : m.example_prompts) demo_prompts << QString::fromStdString(p);
        } catch (const lorascope::Error& e) {
            std::fprintf(stderr, "lorascope: %s\n", e.what());
            if (!cli.isSet(screenshot) && QGuiApplication::platformName() != QLatin1String("offscreen"))
                QMessageBox::critical(nullptr, QStringLiteral("Lorascope demo"), QString::fromStdString(e.what()));
            return 1;
        }
    } else if (cli.isSet(demo_model) || cli.isSet(demo_dir)) {
        std::fprintf(stderr, "lorascope: --demo-model and --demo-dir need --demo\n");
        return 2;
    }

    lorascope::ui::MainWindowOptions options;
    // A server location (http://..., openai+http://...) gets the remote backend; a directory the engine.
    options.engine_factory = [](const lorascope::EngineOptions& o) {
        return lorascope::ui::createEngineForLocation(o, [](const lorascope::EngineOptions& local) {
            return lorascope::Engine::create(local);
        });
    };
    lorascope::ui::MainWindow window(std::move(options));
    window.modelPanel()->setComputeTypes(lorascope::cpu_compute_types(), QString::fromUtf8(lorascope::int8_accuracy_note()));
    if (cli.isSet(device)) window.modelPanel()->setDevice(cli.value(device));
    if (cli.isSet(threads)) window.modelPanel()->setThreads(cli.value(threads).toInt());

    QString model_dir = cli.isSet(demo) ? demo_model_dir : cli.value(model);
    if (model_dir.isEmpty() && !cli.positionalArguments().isEmpty()) model_dir = cli.positionalArguments().front();
    const QStringList adapter_dirs = cli.isSet(demo) ? demo_adapters + cli.values(adapter) : cli.values(adapter);

    if (!cli.isSet(screenshot)) {
        window.show();
        if (!model_dir.isEmpty()) window.loadModel(model_dir);
        if (!adapter_dirs.isEmpty()) {
            // Adapters load into an engine: add them once the model is up, then aim the example
            // prompts at the base model and every adapter.
            auto* bridge = window.bridge();
            auto added = std::make_shared<bool>(false);
            QObject::connect(bridge, &lorascope::ui::EngineBridge::loadFinished, &window, [&window, adapter_dirs, added] {
                if (*added) return;
                *added = true;
                for (const QString& dir : adapter_dirs) window.addAdapter(dir);
            });
            if (cli.isSet(demo))
                QObject::connect(window.adapterModel(), &lorascope::ui::AdapterListModel::readyNamesChanged, &window,
                                 [&window](const QStringList& names) {
                                     window.composer()->setSelectedTargets(QStringList{QString()} + names);
                                 });
        }
        if (!demo_prompts.isEmpty()) window.composer()->setPrompts(demo_prompts);
        if (cli.isSet(lab)) {
            window.focusLab();
            // Once the model and every adapter are in: the preset over all of them, slowed down.
            auto started = std::make_shared<bool>(false);
            auto start_lab = [&window, started, expected = adapter_dirs.size()] {
                if (*started || !window.bridge()->hasEngine() || int(window.bridge()->adapters().size()) < expected) return;
                *started = true;
                window.labView()->usePreset();
                window.labView()->setMinStepMs(120);
                window.labView()->run();
            };
            QObject::connect(window.bridge(), &lorascope::ui::EngineBridge::loadFinished, &window, start_lab);
            QObject::connect(window.adapterModel(), &lorascope::ui::AdapterListModel::readyNamesChanged, &window, start_lab);
        }
        return app.exec();
    }

    // Screenshot mode: optionally load, add adapters, fan a prompt out, let it stream, render.
    auto* bridge = window.bridge();
    window.resize(1280, 800);
    window.show();
    // A model, adapter or request that failed still gets its screenshots (they show the error
    // state), but the exit status says so: scripts and tests must not mistake them for the real views.
    bool load_failed = false;
    if (!model_dir.isEmpty()) {
        bool failed = false;
        QObject::connect(bridge, &lorascope::ui::EngineBridge::loadFailed, [&](const QString&, const QString& message) {
            std::fprintf(stderr, "lorascope: %s\n", qPrintable(message));
            failed = true;
        });
        window.loadModel(model_dir);
        spin_until([&] { return failed || bridge->hasEngine(); }, 300000);
        if (bridge->hasEngine()) {
            QStringList targets{QString()};
            for (const QString& dir : adapter_dirs) window.addAdapter(dir);
            spin_until([&] {
                for (const auto& e : window.adapterModel()->entries())
                    if (e.state == lorascope::ui::AdapterListModel::State::Loading) return false;
                return true;
            }, 60000);
            for (const auto& e : window.adapterModel()->entries()) {
                if (e.state == lorascope::ui::AdapterListModel::State::Ready) continue;
                std::fprintf(stderr, "lorascope: adapter %s: %s\n", qPrintable(e.path),
                             qPrintable(e.error.isEmpty() ? QStringLiteral("did not finish loading") : e.error));
                load_failed = true;
            }
            for (const auto& a : bridge->adapters()) targets << QString::fromStdString(a.name);
            window.composer()->setAdapters(targets.mid(1));
            window.composer()->setSelectedTargets(targets);
            if (!demo_prompts.isEmpty() && !cli.isSet(prompt)) {
                // The first example compared across every target, then all examples on all targets
                // so that the request board and the batching inspector show a full batch.
                window.composer()->setPrompts(demo_prompts);
                if (targets.size() > 1) window.compareTargets();
                window.submitPrompts();
            } else {
                window.composer()->setText(cli.isSet(prompt) ? cli.value(prompt) : QStringLiteral("translate English to German: The house is wonderful."));
                if (targets.size() > 1) window.compareTargets();
                else window.submitPrompts();
            }
            spin_until([&] { return window.requestModel()->unfinishedCount() == 0; }, 120000);
            for (const auto& r : window.requestModel()->records()) {
                if (r.status != lorascope::ui::RequestStatus::Failed) continue;
                std::fprintf(stderr, "lorascope: request %s failed: %s\n", qPrintable(r.client_id), qPrintable(r.error));
                load_failed = true;
            }
        } else {
            if (!failed) std::fprintf(stderr, "lorascope: %s: the model did not finish loading\n", qPrintable(model_dir));
            load_failed = true;
        }
    }
    QString error;
    QStringList written = lorascope::ui::renderScreenshots(window, cli.value(screenshot), &error);
    if (cli.isSet(lab) && error.isEmpty()) {
        if (bridge->hasEngine()) {
            auto* view = window.labView();
            view->usePreset();
            view->setMinStepMs(0);
            if (view->run()) {
                spin_until([&] { return !view->runner()->isRunning(); }, 300000);
                for (int i = 0; i < view->runner()->policyCount(); ++i)
                    if (view->runner()->data(i).finishedCount() < int(view->runner()->data(i).requests().size())) {
                        std::fprintf(stderr, "lorascope: the lab's policy %s did not finish\n", qPrintable(view->runner()->policy(i).name));
                        load_failed = true;
                    }
            } else {
                load_failed = true;
            }
        }
        written += lorascope::ui::renderLabScreenshots(window, cli.value(screenshot), &error);
    }
    for (const QString& path : written) std::printf("%s\n", qPrintable(path));
    if (!error.isEmpty()) {
        std::fprintf(stderr, "lorascope: %s\n", qPrintable(error));
        return 1;
    }
    return load_failed ? 1 : 0;
}
