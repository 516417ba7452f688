#include "shell/launch.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <cstdio>
#include <memory>

#include "engine_link/engine_bridge.h"
#include "lab/lab_view.h"
#include "lorascope/demo_pack.h"
#include "lorascope/error.h"
#include "model/adapter_list_model.h"
#include "requests/prompt_composer.h"
#include "shell/main_window.h"

namespace lorascope::ui {

namespace {

QCommandLineOption option(const char* name, const char* help, const char* value = nullptr) {
    return value ? QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(help), QString::fromLatin1(value))
                 : QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(help));
}

// The demo pack's model, adapters and example prompts into `o`; false (explained) when unreadable.
bool takeDemoPack(const QString& key, const QString& dir, bool headless, LaunchOptions& o) {
    try {
        const DemoPack pack = load_demo_pack(dir.toStdString());
        const DemoModel& m = pack.model(key.isEmpty() ? pack.default_model : key.toStdString());
        o.model_dir = QString::fromStdString(m.dir);
        for (const auto& a : m.adapters) o.adapter_dirs << QString::fromStdString(a.dir);
        for (const auto& p : m.example_prompts) o.demo_prompts << QString::fromStdString(p);
        return true;
    } catch (const Error& e) {
        std::fprintf(stderr, "lorascope: %s\n", e.what());
        if (!headless) QMessageBox::critical(nullptr, QStringLiteral("Lorascope demo"), QString::fromStdString(e.what()));
        return false;
    }
}

}  // namespace

std::optional<LaunchOptions> parseLaunchOptions(const QCoreApplication& app, int* exit_code) {
    QCommandLineParser cli;
    cli.setApplicationDescription(QStringLiteral("Desktop workbench for T5, BART, BLOOM and Llama-family (Llama, Mistral, Qwen2) checkpoints and LoRA adapters"));
    cli.addHelpOption();
    cli.addVersionOption();
    cli.addPositionalArgument(QStringLiteral("model"), QStringLiteral("Hugging Face checkpoint directory to load"), QStringLiteral("[model]"));
    const auto screenshot = option("screenshot", "Render the views to PNGs in DIR and exit", "DIR");
    const auto model = option("model", "Model directory", "DIR");
    const auto adapter = option("adapter", "LoRA adapter directory (repeatable)", "DIR");
    const auto prompt = option("prompt", "Prompt to compare across the adapters (with --screenshot)", "TEXT");
    const auto device = option("device", "cpu or cuda[:N]", "DEVICE");
    const auto threads = option("threads", "Compute threads (0: all cores)", "N");
    const auto demo = option("demo", "Load the demo pack's model with its adapters and example prompts");
    const auto demo_model = option("demo-model", "Demo model: t5 (default), bart, bloom or llama", "KEY");
    const auto demo_dir = option("demo-dir", "Demo pack directory (default: LORASCOPE_DEMO_DIR, the installed or source-tree pack)", "DIR");
    const auto lab = option("lab", "Open the batching lab and run its preset workload under two policies");
    cli.addOptions({screenshot, model, adapter, prompt, device, threads, demo, demo_model, demo_dir, lab});
    cli.process(app);

    LaunchOptions o;
    o.demo = cli.isSet(demo);
    o.lab = cli.isSet(lab);
    o.screenshot_dir = cli.value(screenshot);
    if (cli.isSet(prompt)) o.prompt = cli.value(prompt);
    if (cli.isSet(device)) o.device = cli.value(device);
    if (cli.isSet(threads)) o.threads = cli.value(threads).toInt();
    if (o.demo && (cli.isSet(model) || !cli.positionalArguments().isEmpty())) {
        std::fprintf(stderr, "lorascope: --demo loads the demo model: give either --demo or a model directory\n");
        *exit_code = 2;
        return std::nullopt;
    }
    if (!o.demo && (cli.isSet(demo_model) || cli.isSet(demo_dir))) {
        std::fprintf(stderr, "lorascope: --demo-model and --demo-dir need --demo\n");
        *exit_code = 2;
        return std::nullopt;
    }
    const bool headless = cli.isSet(screenshot) || QGuiApplication::platformName() == QLatin1String("offscreen");
    if (o.demo && !takeDemoPack(cli.value(demo_model), cli.value(demo_dir), headless, o)) {
        *exit_code = 1;
        return std::nullopt;
    }
    if (!o.demo) o.model_dir = cli.value(model);
    if (o.model_dir.isEmpty() && !cli.positionalArguments().isEmpty()) o.model_dir = cli.positionalArguments().front();
    o.adapter_dirs += cli.values(adapter);
    return o;
}

namespace {

// Adapters load into an engine: add them once the model is up; the demo then aims its example
// prompts at the base model and every adapter.
void addAdaptersWhenLoaded(MainWindow& window, const LaunchOptions& o) {
    auto added = std::make_shared<bool>(false);
    QObject::connect(window.bridge(), &EngineBridge::loadFinished, &window, [&window, dirs = o.adapter_dirs, added] {
        if (*added) return;
        *added = true;
        for (const QString& dir : dirs) window.addAdapter(dir);
    });
    if (o.demo)
        QObject::connect(window.adapterModel(), &AdapterListModel::readyNamesChanged, &window, [&window](const QStringList& names) {
            window.composer()->setSelectedTargets(QStringList{QString()} + names);
        });
}

// Once the model and every adapter are in: the lab's preset over all of them, slowed down.
void runLabWhenReady(MainWindow& window, int adapters) {
    window.focusLab();
    auto started = std::make_shared<bool>(false);
    auto start_lab = [&window, started, adapters] {
        if (*started || !window.bridge()->hasEngine() || int(window.bridge()->adapters().size()) < adapters) return;
        *started = true;
        window.labView()->usePreset();
        window.labView()->setMinStepMs(120);
        window.labView()->run();
    };
    QObject::connect(window.bridge(), &EngineBridge::loadFinished, &window, start_lab);
    QObject::connect(window.adapterModel(), &AdapterListModel::readyNamesChanged, &window, start_lab);
}

}  // namespace

void startInteractive(MainWindow& window, const LaunchOptions& o) {
    window.showOnScreen();
    if (!o.model_dir.isEmpty()) window.loadModel(o.model_dir);
    if (!o.adapter_dirs.isEmpty()) addAdaptersWhenLoaded(window, o);
    if (!o.demo_prompts.isEmpty()) window.composer()->setPrompts(o.demo_prompts);
    if (o.lab) runLabWhenReady(window, int(o.adapter_dirs.size()));
}

}  // namespace lorascope::ui
