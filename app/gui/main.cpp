// lorascope: the desktop workbench. `lorascope [MODEL_DIR]` opens the window (and loads the model);
// `lorascope --screenshot DIR [--model M --adapter A ... --prompt P]` renders the main window, the
// comparison view and the batching inspector to PNGs and exits (works with QT_QPA_PLATFORM=offscreen).
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <cstdio>

#include "lorascope/engine.h"
#include "adapter_list_model.h"
#include "engine_bridge.h"
#include "main_window.h"
#include "model_panel.h"
#include "prompt_composer.h"
#include "request_table_model.h"
#include "screenshot.h"

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
    cli.addOptions({screenshot, model, adapter, prompt, device, threads});
    cli.process(app);

    lorascope::ui::MainWindowOptions options;
    options.engine_factory = [](const lorascope::EngineOptions& o) { return lorascope::Engine::create(o); };
    lorascope::ui::MainWindow window(std::move(options));
    if (cli.isSet(device)) window.modelPanel()->setDevice(cli.value(device));
    if (cli.isSet(threads)) window.modelPanel()->setThreads(cli.value(threads).toInt());

    QString model_dir = cli.value(model);
    if (model_dir.isEmpty() && !cli.positionalArguments().isEmpty()) model_dir = cli.positionalArguments().front();

    if (!cli.isSet(screenshot)) {
        window.show();
        if (!model_dir.isEmpty()) window.loadModel(model_dir);
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
            for (const QString& dir : cli.values(adapter)) window.addAdapter(dir);
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
            window.composer()->setText(cli.isSet(prompt) ? cli.value(prompt) : QStringLiteral("translate English to German: The house is wonderful."));
            if (targets.size() > 1) window.compareTargets();
            else window.submitPrompts();
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
    const QStringList written = lorascope::ui::renderScreenshots(window, cli.value(screenshot), &error);
    for (const QString& path : written) std::printf("%s\n", qPrintable(path));
    if (!error.isEmpty()) {
        std::fprintf(stderr, "lorascope: %s\n", qPrintable(error));
        return 1;
    }
    return load_failed ? 1 : 0;
}
