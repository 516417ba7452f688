// `lorascope --demo --screenshot DIR` as a user (or the packaging test) runs it, offscreen: the demo
// model (the default, T5, and `--demo-model llama`, the decoder-only one) loads with its adapters,
// the example prompts are compared, and three PNGs are written.
#include <QDir>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "image_checks.h"

class TestDemoScreenshot : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void demoScreenshotRendersTheComparison_data() {
        QTest::addColumn<QStringList>("extra");
        QTest::newRow("default") << QStringList();
        QTest::newRow("llama") << QStringList{QStringLiteral("--demo-model"), QStringLiteral("llama")};
    }
    void demoScreenshotRendersTheComparison() {
        QFETCH(QStringList, extra);
        QTemporaryDir dir;
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(QStringLiteral(LORASCOPE_GUI_PATH), QStringList{QStringLiteral("--demo"), QStringLiteral("--screenshot"), dir.path()} + extra);
        QVERIFY2(p.waitForFinished(240000), "lorascope --demo --screenshot did not finish");
        const QByteArray out = p.readAll();
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, out.constData());
        const QStringList pngs = QDir(dir.path()).entryList({QStringLiteral("*.png")}, QDir::Files);
        QCOMPARE(pngs.size(), 3);
        for (const QString& f : pngs) {
            const QString blank = lorascope::test::blank_image_problem(QImage(dir.filePath(f)), f);
            QVERIFY2(blank.isEmpty(), qPrintable(blank));
        }
    }

    void demoWithBadDirExitsWithTheReason() {
        QProcess p;
        p.start(QStringLiteral(LORASCOPE_GUI_PATH), {QStringLiteral("--demo"), QStringLiteral("--demo-dir"),
                                                     QStringLiteral("/nonexistent/demo-pack"), QStringLiteral("--screenshot"),
                                                     QDir::tempPath()});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        const QByteArray err = p.readAllStandardError();
        QVERIFY2(err.contains("/nonexistent/demo-pack") && err.contains("scripts/train-demo"), err.constData());
    }
};

QTEST_GUILESS_MAIN(TestDemoScreenshot)
#include "test_demo_screenshot.moc"
