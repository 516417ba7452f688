#include "shell/screenshot.h"

#include <QCoreApplication>
#include <QDir>
#include <QPixmap>

#include "lab/lab_charts.h"
#include "lab/lab_view.h"
#include "shell/main_window.h"

namespace lorascope::ui {

namespace {

// The output directory exists and the window is shown at the README's size; false (with `error`)
// when the directory cannot be made.
bool prepare(MainWindow& window, const QString& dir, QString* error) {
    if (!QDir().mkpath(dir)) {
        if (error) *error = QStringLiteral("%1: cannot create the directory").arg(dir);
        return false;
    }
    window.resize(1280, 800);
    window.show();
    return true;
}

// Writes `widget` as dir/file, appending the path to `written`; false (with `error`) on failure.
// Quality 0 is PNG's strongest (still lossless) compression: the README embeds these files.
bool save(QWidget& widget, const QString& dir, const char* file, QStringList& written, QString* error) {
    const QString path = QDir(dir).filePath(QLatin1String(file));
    if (!widget.grab().save(path, "PNG", 0)) {
        if (error) *error = QStringLiteral("%1: could not write the PNG").arg(path);
        return false;
    }
    written << path;
    return true;
}

}  // namespace

QStringList renderScreenshots(MainWindow& window, const QString& dir, QString* error) {
    QStringList written;
    if (!prepare(window, dir, error)) return written;
    const struct { MainWindow::Tab tab; const char* file; } shots[] = {
        {MainWindow::Tab::Requests, "main.png"},
        {MainWindow::Tab::Compare, "compare.png"},
        {MainWindow::Tab::Batching, "batching.png"},
    };
    for (const auto& shot : shots) {
        window.showTab(shot.tab);
        window.bridge()->drainNow();
        for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();   // layouts settle over a few passes
        if (!save(window, dir, shot.file, written, error)) return written;
    }
    window.showTab(MainWindow::Tab::Requests);
    return written;
}

QStringList renderLabScreenshots(MainWindow& window, const QString& dir, QString* error) {
    QStringList written;
    if (!prepare(window, dir, error)) return written;
    window.focusLab();
    window.labView()->refreshNow();
    for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
    const struct { QWidget* widget; const char* file; } shots[] = {
        {&window, "lab.png"},
        {window.labView()->charts(), "lab-charts.png"},
    };
    for (const auto& shot : shots)
        if (!save(*shot.widget, dir, shot.file, written, error)) return written;
    return written;
}

}  // namespace lorascope::ui
