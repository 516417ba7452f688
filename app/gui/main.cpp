// lorascope: the desktop workbench. `lorascope [MODEL_DIR]` opens the window (and loads the model);
// `lorascope --demo [--demo-model KEY]` opens the trained demo pack's model with its adapters and
// example prompts; `--lab` opens the batching lab and runs its preset; `--screenshot DIR` renders the
// views to PNGs and exits (works with QT_QPA_PLATFORM=offscreen). The options and what each start-up
// does live in ui/shell (launch.h, screenshot_run.h); this file sets up the application and hands
// the window the real engine behind its factory, reached through the engine module
// (engine_module.h), which is loaded on first use.
#include <QApplication>
#include <QIcon>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "engine_link/engine_bridge.h"
#include "engine_module_loader.h"
#include "model/model_panel.h"
#include "remote/remote_backend.h"
#include "shell/launch.h"
#include "shell/main_window.h"
#include "shell/screenshot_run.h"

namespace {

using lorascope::gui::engineModule;

void describeApplication() {
    QCoreApplication::setOrganizationName(QStringLiteral("Lorascope"));
    QCoreApplication::setApplicationName(QStringLiteral("Lorascope"));
    QCoreApplication::setApplicationVersion(QStringLiteral(LORASCOPE_VERSION));
}

// --help and --version print and exit: answered by a QCoreApplication, without the display
// connection that QApplication needs (its xcb plugin aborts without one) or the engine.
bool asksOnlyForText(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") break;
        if (a == "-h" || a == "-?" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version") return true;
    }
    return false;
}

struct CpuReport {
    std::vector<lorascope::ComputeType> types;
    QString int8_note;
};

CpuReport cpuReport() {
    const auto& m = engineModule();
    return {m.cpu_compute_types(), QString::fromUtf8(m.int8_accuracy_note())};
}

// What the model panel says of each dtype comes from the engine module, asked on the loader's
// thread by the first local model load (cpu_compute_types probes the CPU's kernels: not on the GUI
// thread) and shown when that load finishes. Not earlier on a thread of its own: dlopen holds the
// dynamic loader's lock through LibTorch's initialisers, and a GUI thread that needed the lock
// meanwhile (a thread started, an exception thrown) froze with it; quitting idle took 4-6 s in
// 3 of 5 runs (scripts/bench-startup).
struct CpuReportSlot {
    std::mutex mutex;
    std::optional<CpuReport> report;
    bool shown = false;
};

void reportComputeTypesOnFirstLoad(lorascope::ui::MainWindow& window, std::shared_ptr<CpuReportSlot> slot) {
    auto* panel = window.modelPanel();
    QObject::connect(window.bridge(), &lorascope::ui::EngineBridge::loadFinished, panel, [panel, slot] {
        std::lock_guard<std::mutex> lock(slot->mutex);
        if (!slot->report || slot->shown) return;   // a server's model: the engine's turn comes later
        slot->shown = true;
        panel->setComputeTypes(slot->report->types, slot->report->int8_note);
    });
}

int runWindow(int argc, char** argv) {
    QApplication app(argc, argv);
    describeApplication();
    // Lets Wayland docks and task bars match the window to lorascope.desktop and its icon.
    QGuiApplication::setDesktopFileName(QStringLiteral("lorascope"));
    QApplication::setWindowIcon(QIcon::fromTheme(QStringLiteral("lorascope")));

    int exit_code = 0;
    const auto options = lorascope::ui::parseLaunchOptions(app, &exit_code);
    if (!options) return exit_code;

    lorascope::ui::MainWindowOptions window_options;
    // A server location (http://..., openai+http://...) gets the remote backend; a directory the engine.
    auto cpu_report = std::make_shared<CpuReportSlot>();
    window_options.engine_factory = [cpu_report](const lorascope::EngineOptions& o) {
        return lorascope::ui::createEngineForLocation(o, [cpu_report](const lorascope::EngineOptions& local) {
            const auto& module = engineModule();
            {
                std::lock_guard<std::mutex> lock(cpu_report->mutex);
                if (!cpu_report->report) cpu_report->report = cpuReport();
            }
            return module.create(local);
        });
    };
    window_options.about.torch_version = [] {
        try {
            return QString::fromStdString(engineModule().runtime_info().torch_version);
        } catch (const std::exception&) {
            return QString();
        }
    };
    window_options.about.compute_types = [] {
        QStringList lines;
        try {
            for (const auto& t : engineModule().cpu_compute_types())
                lines << QStringLiteral("%1: %2").arg(QString::fromStdString(t.name), QString::fromStdString(t.detail));
        } catch (const std::exception&) {
        }
        return lines;
    };
    lorascope::ui::MainWindow window(std::move(window_options));
    if (options->device) window.modelPanel()->setDevice(*options->device);
    if (options->threads) window.modelPanel()->setThreads(*options->threads);

    if (!options->screenshot_dir.isEmpty()) {
        try {   // the screenshots show the panel as a user sees it once the engine is known
            const CpuReport report = cpuReport();
            window.modelPanel()->setComputeTypes(report.types, report.int8_note);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lorascope: %s\n", e.what());
        }
        return lorascope::ui::runScreenshots(window, *options);
    }
    reportComputeTypesOnFirstLoad(window, cpu_report);
    lorascope::ui::startInteractive(window, *options);
    return app.exec();
}

}  // namespace

int main(int argc, char** argv) {
    if (asksOnlyForText(argc, argv)) {
        QCoreApplication app(argc, argv);
        describeApplication();
        int exit_code = 0;
        lorascope::ui::parseLaunchOptions(app, &exit_code);   // prints, and exits with 0
        return exit_code;
    }
    const int exit_code = runWindow(argc, argv);
    // The window, its engines (joined by their loader) and its settings (written) are gone by now;
    // what is left are static destructors, LibTorch's among them once the engine module was loaded:
    // the process ends without them (docs/benchmarks.md, quit).
    std::fflush(nullptr);
    std::_Exit(exit_code);
}
