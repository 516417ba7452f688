// How `lorascope` starts: its command line, and what the window does first with it (load a model
// and adapters, fill in the demo pack's prompts, open and run the lab). The screenshot mode, which
// renders the views to PNGs and exits, lives in shell/screenshot_run.h.
#pragma once

#include <QString>
#include <QStringList>
#include <optional>

class QCoreApplication;

namespace lorascope::ui {

class MainWindow;

struct LaunchOptions {
    QString model_dir;           // --model, the positional argument or the demo pack's model
    QStringList adapter_dirs;    // --adapter (and the demo pack's adapters)
    QStringList demo_prompts;    // the demo pack's example prompts
    bool demo = false;
    bool lab = false;
    QString screenshot_dir;      // empty: interactive
    std::optional<QString> prompt;   // --prompt (screenshot mode)
    std::optional<QString> device;
    std::optional<int> threads;
};

// Parses the command line (--help and --version print and exit, as Qt does). Returns none with
// `exit_code` set when the process should end now: a usage error (2) or a demo pack that cannot be
// read (1), each explained on stderr.
std::optional<LaunchOptions> parseLaunchOptions(const QCoreApplication& app, int* exit_code);

// Interactive start-up: shows the window, loads the model, adds the adapters once it is up, aims
// the demo prompts at every target, and with --lab runs the lab's preset slowed down to watch.
void startInteractive(MainWindow& window, const LaunchOptions& options);

}  // namespace lorascope::ui
