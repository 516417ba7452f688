// The Help menu: the README, the keyboard shortcuts (read from the window's own actions, so the
// list cannot drift from them) and About, which names the versions of Lorascope, Qt and LibTorch
// and the CPU features the engine can use.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <functional>

class QAction;
class QMainWindow;

namespace lorascope::ui {

struct AboutInfo {
    // The LibTorch the engine was built against (asked when About opens: the engine module loads on
    // first use); null or empty: unknown.
    std::function<QString()> torch_version;
    // What the CPU computes each dtype with (the engine's own report), once the engine is loaded;
    // null or empty before.
    std::function<QStringList()> compute_types;
};

// What this CPU offers of what the engine's kernels use (AVX2, FMA, AVX-512, VNNI, BF16, AMX).
QStringList cpuFeatures();
// The About text (HTML): versions and CPU features.
QString aboutText(const AboutInfo& info);
// "Ctrl+O\tOpen model" lines for every action with a shortcut, then the editor's keys (HTML table).
QString shortcutsText(const QList<QAction*>& actions);
// The README to open: the installed one, else the source tree's (a build); empty when none is found.
QString readmePath();

// Adds the Help menu to `window`'s menu bar.
void addHelpMenu(QMainWindow* window, const AboutInfo& about);

}  // namespace lorascope::ui
