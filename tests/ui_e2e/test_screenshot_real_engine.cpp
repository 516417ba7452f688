// `lorascope --screenshot DIR --model M --adapter A --adapter B` as a user runs it, on the oracle's
// tiny T5 with two adapters and the real engine: it exits 0 and writes the main window, the
// comparison view and the batching inspector as PNGs of about 1280x800, none of them blank.
#include <QDir>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "e2e_support.h"
#include "image_checks.h"

class ScreenshotRealEngineTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // The check below would pass anything if it could not tell a blank window from a painted one.
    void blankCheckRejectsUniformAndAcceptsPaintedImages() {
        QImage flat(1280, 800, QImage::Format_RGB32);
        flat.fill(QColor(239, 239, 239));
        QVERIFY(!lorascope::test::blank_image_problem(flat, QStringLiteral("flat")).isEmpty());
        QImage painted = flat;
        for (int y = 0; y < painted.height(); ++y)
            for (int x = 0; x < painted.width(); ++x)
                if ((x / 7 + y / 11) % 3 == 0) painted.setPixelColor(x, y, QColor::fromHsv((x * 7 + y) % 360, 200, (x + y) % 256));
        QVERIFY2(lorascope::test::blank_image_problem(painted, QStringLiteral("painted")).isEmpty(),
                 qPrintable(lorascope::test::blank_image_problem(painted, QStringLiteral("painted"))));
    }

    void screenshotModeWritesThreeWindowSizedPngs() {
        const lorascope::test::E2eManifest m = lorascope::test::loadE2eManifest();
        QVERIFY2(m.error.isEmpty(), qPrintable(m.error));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QStringList args{QStringLiteral("--screenshot"), dir.path(), QStringLiteral("--model"), m.model,
                         QStringLiteral("--threads"), QStringLiteral("1")};
        for (const auto& a : m.adapters) args << QStringLiteral("--adapter") << a.dir;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir.filePath(QStringLiteral("config")));   // leave the user's settings alone
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(LORASCOPE_GUI_PATH), args);
        QVERIFY2(p.waitForFinished(240000), "lorascope --screenshot did not finish");
        const QString err = QString::fromLocal8Bit(p.readAllStandardError());
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, qPrintable(err));
        QStringList written;
        for (const QByteArray& line : p.readAllStandardOutput().split('\n'))
            if (line.trimmed().endsWith(".png")) written << QString::fromLocal8Bit(line.trimmed());
        QCOMPARE(written.size(), 3);
        const QStringList on_disk = QDir(dir.path()).entryList({QStringLiteral("*.png")}, QDir::Files);
        QCOMPARE(on_disk.size(), 3);
        for (const QString& f : written) {
            const QImage image(f);
            QVERIFY2(!image.isNull(), qPrintable(f));
            QVERIFY2(qAbs(image.width() - 1280) <= 64 && qAbs(image.height() - 800) <= 64,
                     qPrintable(QStringLiteral("%1 is %2x%3").arg(f).arg(image.width()).arg(image.height())));
            const QString blank = lorascope::test::blank_image_problem(image, f);
            QVERIFY2(blank.isEmpty(), qPrintable(blank));
        }
    }
};

QTEST_MAIN(ScreenshotRealEngineTest)
#include "test_screenshot_real_engine.moc"
