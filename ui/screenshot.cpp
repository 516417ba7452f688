#include "screenshot.h"

#include <QCoreApplication>
#include <QDir>
#include <QPixmap>

#include "lab_charts.h"
#include "lab_view.h"
#include "main_window.h"

namespace lorascope::ui {

QStringList renderScreenshots(MainWindow& window, const QString& dir, QString* error) {
    QStringList written;
    if (!QDir().mkpath(dir)) {
        if (error) *error = QStringLiteral("%1: cannot create the directory").arg(dir);
        return written;
    }
    window.resize(1280, 800);
    window.show();
    const struct { MainWindow::Tab tab; const char* file; } shots[] = {
        {MainWindow::Tab::Requests, "main.png"},
        {MainWindow::Tab::Compare, "compare.png"},
        {MainWindow::Tab::Batching, "batching.png"},
    };
    for (const auto& shot : shots) {
        window.showTab(shot.tab);
        window.bridge()->drainNow();
        for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();   // layouts settle over a few passes
        const QString path = QDir(dir).filePath(QLatin1String(shot.file));
        // Quality 0 is PNG's strongest (still lossless) compression: the README embeds these files.
        if (!window.grab().save(path, "PNG", 0)) {
            if (error) *error = QStringLiteral("%1: could not write the PNG").arg(path);
            return written;
        }
        written << path;
    }
    window.showTab(MainWindow::Tab::Requests);
    return written;
}

QStringList renderLabScreenshots(MainWindow& window, const QString& dir, QString* error) {
    QStringList written;
    if (!QDir().mkpath(dir)) {
        if (error) *error = QStringLiteral("%1: cannot create the directory").arg(dir);
        return written;
    }
    window.resize(1280, 800);
    window.show();
    window.focusLab();
    window.labView()->refreshNow();
    for (int i = 0; i < 5; ++i) QCoreApplication::processEvents();
    const struct { QWidget* widget; const char* file; } shots[] = {
        {&window, "lab.png"},
        {window.labView()->charts(), "lab-charts.png"},
    };
    for (const auto& shot : shots) {
        const QString path = QDir(dir).filePath(QLatin1String(shot.file));
        if (!shot.widget->grab().save(path, "PNG", 0)) {
            if (error) *error = QStringLiteral("%1: could not write the PNG").arg(path);
            return written;
        }
        written << path;
    }
    return written;
}

}  // namespace lorascope::ui
