// lorascope: the desktop workbench. `lorascope [MODEL_DIR]` opens the window (and loads the model);
// `lorascope --demo [--demo-model KEY]` opens the trained demo pack's model with its adapters and
// example prompts; `--lab` opens the batching lab and runs its preset; `--screenshot DIR` renders the
// views to PNGs and exits (works with QT_QPA_PLATFORM=offscreen). The options and what each start-up
// does live in ui/shell (launch.h, screenshot_run.h); this file sets up the application and hands
// the window the real engine behind its factory.
#include <QApplication>
#include <QIcon>

#include "lorascope/engine.h"
#include "lorascope/runtime.h"
#include "model/model_panel.h"
#include "remote/remote_backend.h"
#include "shell/launch.h"
#include "shell/main_window.h"
#include "shell/screenshot_run.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Lorascope"));
    QApplication::setApplicationName(QStringLiteral("Lorascope"));
    // Lets Wayland docks and task bars match the window to lorascope.desktop and its icon.
    QGuiApplication::setDesktopFileName(QStringLiteral("lorascope"));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("lorascope")));
    QApplication::setApplicationVersion(QStringLiteral(LORASCOPE_VERSION));

    int exit_code = 0;
    const auto options = lorascope::ui::parseLaunchOptions(app, &exit_code);
    if (!options) return exit_code;

    lorascope::ui::MainWindowOptions window_options;
    // A server location (http://..., openai+http://...) gets the remote backend; a directory the engine.
    window_options.engine_factory = [](const lorascope::EngineOptions& o) {
        return lorascope::ui::createEngineForLocation(o, [](const lorascope::EngineOptions& local) {
            return lorascope::Engine::create(local);
        });
    };
    lorascope::ui::MainWindow window(std::move(window_options));
    window.modelPanel()->setComputeTypes(lorascope::cpu_compute_types(), QString::fromUtf8(lorascope::int8_accuracy_note()));
    if (options->device) window.modelPanel()->setDevice(*options->device);
    if (options->threads) window.modelPanel()->setThreads(*options->threads);

    if (!options->screenshot_dir.isEmpty()) return lorascope::ui::runScreenshots(window, *options);
    lorascope::ui::startInteractive(window, *options);
    return app.exec();
}
