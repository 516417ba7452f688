// The .deb as a user gets it. cpack builds it from this build tree into a temporary directory,
// dpkg -x unpacks it into a temporary root, and the unpacked binaries run from there:
// `lorascope-cli generate --demo` and `lorascope --demo --screenshot` must find the demo pack the
// package carries (<exe dir>/../share/lorascope/demo), not the source tree's.
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Run {
    int exit_code = -1;   // -1: did not start, crashed or timed out
    QString out, err;
};

Run run(const QString& program, const QStringList& args, int timeout_ms,
        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    Run r;
    if (!p.waitForStarted(30000)) {
        r.err = program + QStringLiteral(": ") + p.errorString();
        return r;
    }
    const bool finished = p.waitForFinished(timeout_ms);
    r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
    r.err = QString::fromLocal8Bit(p.readAllStandardError());
    if (!finished) {
        p.kill();
        p.waitForFinished(5000);
        r.err += QStringLiteral("\n(timed out after %1 s)").arg(timeout_ms / 1000);
        return r;
    }
    r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return r;
}

QString describe(const QString& what, const Run& r) {
    return QStringLiteral("%1 exited %2\nstdout:\n%3\nstderr:\n%4").arg(what).arg(r.exit_code).arg(r.out.right(4000), r.err.right(4000));
}

// Package names of a Depends field ("a (>= 1), b | c" -> a, b, c).
QSet<QString> dependency_names(const QString& depends) {
    QSet<QString> names;
    for (const QString& clause : depends.split(QLatin1Char(',')))
        for (const QString& alternative : clause.split(QLatin1Char('|'))) {
            const QString name = alternative.trimmed().section(QLatin1Char(' '), 0, 0).section(QLatin1Char(':'), 0, 0);
            if (!name.isEmpty()) names.insert(name);
        }
    return names;
}

// The key=value pairs of a desktop file's [Desktop Entry] group.
QMap<QString, QString> desktop_entry(const QString& path) {
    QMap<QString, QString> entry;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return entry;
    bool in_group = false;
    for (const QByteArray& raw : f.readAll().split('\n')) {
        const QString line = QString::fromUtf8(raw).trimmed();
        if (line.startsWith(QLatin1Char('['))) in_group = line == QStringLiteral("[Desktop Entry]");
        else if (in_group && line.contains(QLatin1Char('=')) && !line.startsWith(QLatin1Char('#')))
            entry.insert(line.section(QLatin1Char('='), 0, 0).trimmed(), line.section(QLatin1Char('='), 1).trimmed());
    }
    return entry;
}

// The environment of a user who installed the package: no override of the demo pack's location,
// settings in a scratch directory.
QProcessEnvironment user_environment(const QString& config_home) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("LORASCOPE_DEMO_DIR"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), config_home);
    return env;
}

}  // namespace

class DebPackageTest : public QObject {
    Q_OBJECT

    QTemporaryDir work_;
    QString deb_;
    QString root_;       // the package unpacked by dpkg -x
    QString depends_;    // the control file's Depends field
    QSet<QString> contents_;   // paths in the package, as dpkg-deb -c lists them ("./usr/bin/lorascope")

    QString rooted(const QString& path) const { return root_ + path; }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(work_.isValid());
        const QString out_dir = work_.filePath(QStringLiteral("cpack"));
        // -B keeps cpack's staging and output in the temporary directory: nothing lands in the source tree.
        const Run cpack = run(QStringLiteral(LORASCOPE_CPACK),
                              {QStringLiteral("--config"), QStringLiteral(LORASCOPE_CPACK_CONFIG), QStringLiteral("-G"),
                               QStringLiteral("DEB"), QStringLiteral("-B"), out_dir},
                              600000);
        QVERIFY2(cpack.exit_code == 0, qPrintable(describe(QStringLiteral("cpack -G DEB"), cpack)));
        const QStringList debs = QDir(out_dir).entryList({QStringLiteral("*.deb")}, QDir::Files);
        QVERIFY2(debs.size() == 1, qPrintable(QStringLiteral("expected one .deb in %1, found: %2").arg(out_dir, debs.join(QLatin1Char(' ')))));
        deb_ = QDir(out_dir).filePath(debs.front());

        const Run field = run(QStringLiteral(LORASCOPE_DPKG_DEB), {QStringLiteral("--field"), deb_, QStringLiteral("Depends")}, 60000);
        QVERIFY2(field.exit_code == 0, qPrintable(describe(QStringLiteral("dpkg-deb --field"), field)));
        depends_ = field.out.simplified();

        const Run listing = run(QStringLiteral(LORASCOPE_DPKG_DEB), {QStringLiteral("--contents"), deb_}, 60000);
        QVERIFY2(listing.exit_code == 0, qPrintable(describe(QStringLiteral("dpkg-deb --contents"), listing)));
        static const QRegularExpression spaces(QStringLiteral("\\s+"));
        for (const QString& line : listing.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            // "-rw-r--r-- root/root 1234 2026-01-01 00:00 ./usr/bin/lorascope": the path is field six on.
            const QStringList fields = line.split(spaces);
            if (fields.size() >= 6) contents_.insert(fields.mid(5).join(QLatin1Char(' ')).section(QStringLiteral(" -> "), 0, 0));
        }

        root_ = work_.filePath(QStringLiteral("root"));
        const Run extract = run(QStringLiteral(LORASCOPE_DPKG), {QStringLiteral("-x"), deb_, root_}, 120000);
        QVERIFY2(extract.exit_code == 0, qPrintable(describe(QStringLiteral("dpkg -x"), extract)));
    }

    void dependsNameLibtorchQtRuntimeAndAnOptimisedBlas() {
        const QSet<QString> names = dependency_names(depends_);
        const auto has_prefix = [&](const QString& prefix) {
            for (const QString& n : names)
                if (n.startsWith(prefix)) return true;
            return false;
        };
        const QString why = QStringLiteral("Depends: ") + depends_;
        QVERIFY2(has_prefix(QStringLiteral("libtorch")), qPrintable(why));   // from dpkg-shlibdeps
        for (const char* qt : {"libqt6core6", "libqt6gui6", "libqt6widgets6", "libqt6charts6", "qt6-qpa-plugins"})
            QVERIFY2(names.contains(QString::fromLatin1(qt)), qPrintable(QStringLiteral("%1 missing; %2").arg(QString::fromLatin1(qt), why)));
        QVERIFY2(names.contains(QStringLiteral("libopenblas0-openmp")) || names.contains(QStringLiteral("libopenblas0")), qPrintable(why));
    }

    void packageCarriesBinariesDesktopEntryIconsDocsAndTheWholeDemoPack() {
        for (const char* path : {"./usr/bin/lorascope", "./usr/bin/lorascope-cli", "." LORASCOPE_ENGINE_MODULE_INSTALLED,
                                 "./usr/share/applications/lorascope.desktop",
                                 "./usr/share/icons/hicolor/scalable/apps/lorascope.svg",
                                 "./usr/share/icons/hicolor/256x256/apps/lorascope.png",
                                 "./usr/share/icons/hicolor/48x48/apps/lorascope.png", "./usr/share/doc/lorascope/copyright",
                                 "./usr/share/doc/lorascope/README.md", "./usr/share/doc/lorascope/changelog.gz",
                                 "./usr/share/man/man1/lorascope.1.gz", "./usr/share/man/man1/lorascope-cli.1.gz",
                                 "./usr/share/lorascope/demo/manifest.json"})
            QVERIFY2(contents_.contains(QString::fromLatin1(path)), qPrintable(QStringLiteral("%1 is not in %2").arg(QString::fromLatin1(path), deb_)));

        // Every file of resources/demo/ is installed, except caches a Python run leaves behind.
        const QDir demo(QStringLiteral(LORASCOPE_SOURCE_DIR "/resources/demo"));
        QDirIterator it(demo.path(), QDir::Files, QDirIterator::Subdirectories);
        int files = 0;
        while (it.hasNext()) {
            const QString rel = demo.relativeFilePath(it.next());
            if (rel.contains(QStringLiteral("__pycache__")) || rel.endsWith(QStringLiteral(".pyc")) || rel.startsWith(QLatin1Char('.')) ||
                rel.contains(QStringLiteral("/.")))
                continue;
            ++files;
            const QString packaged = QStringLiteral("./usr/share/lorascope/demo/") + rel;
            QVERIFY2(contents_.contains(packaged), qPrintable(packaged + QStringLiteral(" is not in the package")));
        }
        QVERIFY2(files > 0, "resources/demo/ has no files: the demo pack is missing from the source tree");
    }

    void desktopEntryStartsTheInstalledBinaryWithTheInstalledIcon() {
        const QString path = rooted(QStringLiteral("/usr/share/applications/lorascope.desktop"));
        const QMap<QString, QString> entry = desktop_entry(path);
        QCOMPARE(entry.value(QStringLiteral("Type")), QStringLiteral("Application"));
        QVERIFY(!entry.value(QStringLiteral("Name")).isEmpty());
        QVERIFY(!entry.value(QStringLiteral("Comment")).isEmpty());
        QCOMPARE(entry.value(QStringLiteral("Terminal")), QStringLiteral("false"));
        QVERIFY(entry.value(QStringLiteral("Categories")).split(QLatin1Char(';')).contains(QStringLiteral("Development")));
        const QString exec = entry.value(QStringLiteral("Exec")).section(QLatin1Char(' '), 0, 0);
        QCOMPARE(exec, QStringLiteral("lorascope"));
        QVERIFY(QFileInfo(rooted(QStringLiteral("/usr/bin/") + exec)).isExecutable());
        const QString icon = entry.value(QStringLiteral("Icon"));
        QCOMPARE(icon, QStringLiteral("lorascope"));
        QVERIFY(QFileInfo::exists(rooted(QStringLiteral("/usr/share/icons/hicolor/scalable/apps/") + icon + QStringLiteral(".svg"))));
        const QImage png(rooted(QStringLiteral("/usr/share/icons/hicolor/256x256/apps/") + icon + QStringLiteral(".png")));
        QCOMPARE(png.size(), QSize(256, 256));
        const QString validator = QStringLiteral(LORASCOPE_DESKTOP_FILE_VALIDATE);
        if (!validator.isEmpty()) {   // desktop-file-utils is optional; where it is installed its verdict counts
            const Run check = run(validator, {path}, 60000);
            QVERIFY2(check.exit_code == 0, qPrintable(describe(QStringLiteral("desktop-file-validate"), check)));
        }
    }

    // A leaked build-tree RPATH would let the installed binaries load libraries from this build
    // directory: they would pass here and fail on a user's machine.
    void installedBinariesCarryNoBuildTreeRpath() {
        for (const char* binary : {"/usr/bin/lorascope", "/usr/bin/lorascope-cli", LORASCOPE_ENGINE_MODULE_INSTALLED}) {
            const Run dyn = run(QStringLiteral(LORASCOPE_READELF), {QStringLiteral("-d"), rooted(QString::fromLatin1(binary))}, 60000);
            QVERIFY2(dyn.exit_code == 0, qPrintable(describe(QStringLiteral("readelf -d"), dyn)));
            for (const QString& line : dyn.out.split(QLatin1Char('\n'))) {
                if (!line.contains(QStringLiteral("(RPATH)")) && !line.contains(QStringLiteral("(RUNPATH)"))) continue;
                QVERIFY2(!line.contains(QStringLiteral(LORASCOPE_BUILD_DIR)) && !line.contains(QStringLiteral(LORASCOPE_SOURCE_DIR)),
                         qPrintable(QStringLiteral("%1: %2").arg(QString::fromLatin1(binary), line.trimmed())));
            }
        }
    }

    void installedCliGeneratesOnTheInstalledDemoPack() {
        const Run gen = run(rooted(QStringLiteral("/usr/bin/lorascope-cli")), {QStringLiteral("generate"), QStringLiteral("--demo")}, 300000,
                            user_environment(work_.filePath(QStringLiteral("config-cli"))));
        QVERIFY2(gen.exit_code == 0, qPrintable(describe(QStringLiteral("lorascope-cli generate --demo"), gen)));
        int lines = 0;
        for (const QString& line : gen.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            QJsonParseError error;
            const QJsonDocument doc = QJsonDocument::fromJson(line.toUtf8(), &error);
            QVERIFY2(error.error == QJsonParseError::NoError && doc.isObject(), qPrintable(QStringLiteral("not a JSON object: ") + line));
            const QJsonObject o = doc.object();
            QVERIFY2(!o.contains(QStringLiteral("error")), qPrintable(line));
            QVERIFY2(!o.value(QStringLiteral("text")).toString().trimmed().isEmpty(), qPrintable(QStringLiteral("no text: ") + line));
            ++lines;
        }
        QVERIFY2(lines > 0, qPrintable(describe(QStringLiteral("lorascope-cli generate --demo wrote no lines;"), gen)));
    }

    // Last, because it moves the installed pack away: an installed binary without its pack must say
    // where it looked, never fall back to the source tree of the machine it was built on.
    void installedCliWithoutItsPackSaysSoInsteadOfUsingTheSourceTree() {
        const QString pack = rooted(QStringLiteral("/usr/share/lorascope/demo"));
        const QString moved = rooted(QStringLiteral("/usr/share/lorascope/demo.moved"));
        QVERIFY(QDir().rename(pack, moved));
        const Run gen = run(rooted(QStringLiteral("/usr/bin/lorascope-cli")), {QStringLiteral("generate"), QStringLiteral("--demo")}, 120000,
                            user_environment(work_.filePath(QStringLiteral("config-nopack"))));
        QVERIFY(QDir().rename(moved, pack));
        QVERIFY2(gen.exit_code != 0, qPrintable(describe(QStringLiteral("lorascope-cli generate --demo without a pack succeeded;"), gen)));
        QVERIFY2(gen.err.contains(QStringLiteral("share/lorascope/demo")), qPrintable(describe(QStringLiteral("error does not name the installed location;"), gen)));
        QVERIFY2(!gen.err.contains(QStringLiteral(LORASCOPE_SOURCE_DIR "/resources/demo")), qPrintable(describe(QStringLiteral("installed binary looked in the source tree;"), gen)));
    }

    void installedGuiRendersThreeScreenshotsOfTheInstalledDemoPack() {
        QProcessEnvironment env = user_environment(work_.filePath(QStringLiteral("config-gui")));
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        const QString shots = work_.filePath(QStringLiteral("shots"));
        const Run gui = run(rooted(QStringLiteral("/usr/bin/lorascope")), {QStringLiteral("--demo"), QStringLiteral("--screenshot"), shots}, 300000, env);
        QVERIFY2(gui.exit_code == 0, qPrintable(describe(QStringLiteral("lorascope --demo --screenshot"), gui)));
        const QFileInfoList pngs = QDir(shots).entryInfoList({QStringLiteral("*.png")}, QDir::Files);
        QVERIFY2(pngs.size() == 3, qPrintable(describe(QStringLiteral("expected three PNGs; lorascope"), gui)));
        for (const QFileInfo& png : pngs) {
            QVERIFY2(png.size() > 0, qPrintable(png.filePath()));
            QVERIFY2(!QImage(png.filePath()).isNull(), qPrintable(png.filePath() + QStringLiteral(" is not a readable PNG")));
        }
    }
};

QTEST_GUILESS_MAIN(DebPackageTest)
#include "test_deb_package.moc"
