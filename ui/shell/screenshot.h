// Renders the main window's three views to PNG files (works offscreen).
#pragma once

#include <QStringList>

namespace lorascope::ui {

class MainWindow;

// Writes main.png, compare.png and batching.png at 1280x800 into dir; returns the paths written.
// On failure returns what was written so far and sets *error.
QStringList renderScreenshots(MainWindow& window, const QString& dir, QString* error);

// Writes lab.png (the window on the batching lab, 1280x800) and lab-charts.png (the lab's charts
// alone) into dir; returns the paths written, setting *error on failure.
QStringList renderLabScreenshots(MainWindow& window, const QString& dir, QString* error);

}  // namespace lorascope::ui
