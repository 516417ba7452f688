#include "shell/help_menu.h"

#include <QAction>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDir>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QUrl>

namespace lorascope::ui {

QStringList cpuFeatures() {
    QStringList out;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    const struct { bool has; const char* name; } features[] = {
        {bool(__builtin_cpu_supports("avx2")), "AVX2"},
        {bool(__builtin_cpu_supports("fma")), "FMA"},
        {bool(__builtin_cpu_supports("avx512f")), "AVX-512"},
        {bool(__builtin_cpu_supports("avx512vnni")), "AVX-512 VNNI (int8)"},
        {bool(__builtin_cpu_supports("avx512bf16")), "AVX-512 BF16"},
        {bool(__builtin_cpu_supports("amx-tile")), "AMX"},
    };
    for (const auto& f : features)
        if (f.has) out << QLatin1String(f.name);
#endif
    return out;
}

QString aboutText(const AboutInfo& info) {
    const QString version = info.torch_version ? info.torch_version() : QString();
    const QString torch = version.isEmpty() ? QCoreApplication::translate("Help", "unknown") : version;
    const QStringList features = cpuFeatures();
    QString text = QCoreApplication::translate("Help", "<h3>Lorascope %1</h3><p>A workbench for T5, BART, BLOOM and Llama-family (Llama, Mistral, Qwen2) checkpoints "
                                                       "and their LoRA adapters.</p><table>"
                                                       "<tr><td>Qt</td><td>%2 (built with %3)</td></tr>"
                                                       "<tr><td>LibTorch</td><td>%4</td></tr>"
                                                       "<tr><td>CPU features</td><td>%5</td></tr></table>")
                       .arg(QCoreApplication::applicationVersion().toHtmlEscaped(), QString::fromLatin1(qVersion()),
                            QStringLiteral(QT_VERSION_STR), torch.toHtmlEscaped(),
                            features.isEmpty() ? QCoreApplication::translate("Help", "none of AVX2, AVX-512, VNNI, BF16, AMX")
                                               : features.join(QStringLiteral(", ")));
    const QStringList types = info.compute_types ? info.compute_types() : QStringList();
    if (types.isEmpty()) {
        text += QCoreApplication::translate("Help", "<p>What each dtype computes with is known once a local model is loaded.</p>");
    } else {
        text += QStringLiteral("<p>");
        for (const QString& t : types) text += t.toHtmlEscaped() + QStringLiteral("<br>");
        text += QStringLiteral("</p>");
    }
    return text;
}

QString shortcutsText(const QList<QAction*>& actions) {
    QString rows;
    auto row = [&rows](const QString& keys, const QString& what) {
        rows += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
    };
    for (const QAction* a : actions) {
        if (a->shortcuts().isEmpty()) continue;
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        // "&&" is a literal ampersand, a lone '&' marks the mnemonic.
        QString what = a->text();
        what.replace(QStringLiteral("&&"), QStringLiteral("\x01")).remove(QLatin1Char('&')).replace(QLatin1Char('\x01'), QLatin1Char('&'));
        row(keys.join(QStringLiteral(", ")), what);
    }
    row(QCoreApplication::translate("Help", "Tab, Shift+Tab"), QCoreApplication::translate("Help", "Next or previous control (from the prompt editor too)"));
    row(QCoreApplication::translate("Help", "Ctrl+Tab"), QCoreApplication::translate("Help", "A tab character in the prompt editor"));
    return QStringLiteral("<table cellspacing=4>%1</table>").arg(rows);
}

QString readmePath() {
    const QDir bin(QCoreApplication::applicationDirPath());
    for (const QString& candidate : {bin.filePath(QStringLiteral("../share/doc/lorascope/README.md")),
                                     QStringLiteral("/usr/share/doc/lorascope/README.md")})
        if (QFileInfo::exists(candidate)) return QDir::cleanPath(candidate);
    // A build tree (build/<preset>/bin, build/<preset>/tests/ui): the source tree's, a few levels up.
    QDir up = bin;
    for (int level = 0; level < 5 && up.cdUp(); ++level)
        if (QFileInfo::exists(up.filePath(QStringLiteral("CMakePresets.json"))) && QFileInfo::exists(up.filePath(QStringLiteral("README.md"))))
            return up.filePath(QStringLiteral("README.md"));
    return {};
}

void addHelpMenu(QMainWindow* window, const AboutInfo& about) {
    QMenu* help = window->menuBar()->addMenu(QCoreApplication::translate("Help", "&Help"));
    help->addAction(QCoreApplication::translate("Help", "&README"), window, [window] {
        const QString path = readmePath();
        if (path.isEmpty() || !QDesktopServices::openUrl(QUrl::fromLocalFile(path)))
            QMessageBox::information(window, QCoreApplication::translate("Help", "README"),
                                     path.isEmpty() ? QCoreApplication::translate("Help", "No README.md was found next to Lorascope.")
                                                    : QCoreApplication::translate("Help", "Open %1 with a text viewer.").arg(path));
    });
    help->addAction(QCoreApplication::translate("Help", "&Keyboard shortcuts"), window, [window] {
        QMessageBox box(QMessageBox::NoIcon, QCoreApplication::translate("Help", "Keyboard shortcuts"), shortcutsText(window->actions()),
                        QMessageBox::Close, window);
        box.setTextFormat(Qt::RichText);
        box.exec();
    });
    help->addSeparator();
    help->addAction(QCoreApplication::translate("Help", "&About Lorascope"), window,
                    [window, about] { QMessageBox::about(window, QCoreApplication::translate("Help", "About Lorascope"), aboutText(about)); });
}

}  // namespace lorascope::ui
