// EngineBridge against the fake engine: events cross from the engine thread to the GUI thread,
// arrive batched per drain tick, and load/cancel/pause/step/error paths behave.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>
#include <map>

#include "engine_link/engine_bridge.h"
#include "fake_engine.h"
#include "ui_test_support.h"

using namespace lorascope;
using namespace lorascope::ui;

class BridgeFakeEngineTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString model_;

    std::unique_ptr<EngineBridge> loadedBridge(test::FakeEngineSettings settings = {}) {
        auto bridge = std::make_unique<EngineBridge>(
            [settings](const EngineOptions& o) { return test::FakeEngine::create(o, settings); });
        QSignalSpy finished(bridge.get(), &EngineBridge::loadFinished);
        EngineOptions options;
        options.model_dir = model_.toStdString();
        options.max_batch_size = 3;
        bridge->loadModel(options);
        if (!finished.wait(5000)) return nullptr;
        return bridge;
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        model_ = test::makeFakeModelDir(dir_.path(), QStringLiteral("model"));
    }

    void streamsCrossThreadsAndMatchTheScript() {
        auto bridge = loadedBridge();
        QVERIFY(bridge);
        std::map<Ticket, QString> streamed, final_text;
        std::map<Ticket, std::string> prompt_of;
        int ticks = 0;
        bool off_gui_thread = false;
        connect(bridge.get(), &EngineBridge::drained, [&](const DrainBatch& b) {
            ++ticks;
            if (QThread::currentThread() != QCoreApplication::instance()->thread()) off_gui_thread = true;
            for (const auto& t : b.tokens) streamed[t.ticket] += t.token.text;
            for (const auto& f : b.finishes) final_text[f.ticket] = QString::fromStdString(f.event.text);
        });
        QElapsedTimer clock;
        clock.start();
        for (int i = 0; i < 5; ++i) {
            Request r;
            r.prompt = "prompt number " + std::to_string(i);
            const Ticket t = bridge->submit(r);
            QVERIFY(t != 0);
            prompt_of[t] = *r.prompt;
        }
        QTRY_COMPARE_WITH_TIMEOUT(final_text.size(), size_t(5), 10000);
        QVERIFY(!off_gui_thread);
        for (const auto& [ticket, prompt] : prompt_of) {
            const QString expected = QString::fromStdString(test::FakeEngine::expected_text(prompt, "", 12));
            QCOMPARE(streamed[ticket], expected);
            QCOMPARE(final_text[ticket], expected);
        }
        // Batched: never more drains than timer ticks (plus slack for the first and last).
        QVERIFY2(ticks <= clock.elapsed() / bridge->drainIntervalMs() + 2,
                 qPrintable(QStringLiteral("%1 drains in %2 ms").arg(ticks).arg(clock.elapsed())));
    }

    void pauseHoldsAndStepOnceRunsExactlyOneStep() {
        auto bridge = loadedBridge();
        QVERIFY(bridge);
        int tokens = 0, steps = 0;
        connect(bridge.get(), &EngineBridge::drained, [&](const DrainBatch& b) {
            tokens += int(b.tokens.size());
            steps += int(b.steps.size());
        });
        bridge->setPaused(true);
        QVERIFY(bridge->isPaused());
        Request r;
        r.prompt = "held";
        bridge->submit(r);
        QTest::qWait(200);
        QCOMPARE(tokens, 0);
        bridge->stepOnce();
        QTRY_COMPARE_WITH_TIMEOUT(steps, 1, 2000);
        QCOMPARE(tokens, 1);
        QTest::qWait(150);
        QCOMPARE(steps, 1);
        bridge->setPaused(false);
        QTRY_COMPARE_WITH_TIMEOUT(tokens, 12, 5000);
    }

    void cancelFinishesWithCancelled() {
        test::FakeEngineSettings slow;
        slow.step_delay_ms = 20;
        slow.default_new_tokens = 1000;
        auto bridge = loadedBridge(slow);
        QVERIFY(bridge);
        std::map<Ticket, FinishReason> reasons;
        connect(bridge.get(), &EngineBridge::drained, [&](const DrainBatch& b) {
            for (const auto& f : b.finishes) reasons[f.ticket] = f.event.reason;
        });
        Request r;
        r.prompt = "long";
        const Ticket a = bridge->submit(r), b = bridge->submit(r), c = bridge->submit(r);
        QTest::qWait(100);
        bridge->cancel(a);
        QTRY_VERIFY_WITH_TIMEOUT(reasons.count(a), 3000);
        QCOMPARE(int(reasons[a]), int(FinishReason::Cancelled));
        QVERIFY(!reasons.count(b));
        QVERIFY(bridge->isActive(b));
        bridge->cancelAll();
        QTRY_VERIFY_WITH_TIMEOUT(reasons.count(b) && reasons.count(c), 3000);
        QCOMPARE(int(reasons[c]), int(FinishReason::Cancelled));
        QVERIFY(!bridge->isActive(c));
    }

    void badDirectoryFailsWithTheFactorysMessage() {
        EngineBridge bridge([](const EngineOptions& o) { return test::FakeEngine::create(o); });
        QSignalSpy failed(&bridge, &EngineBridge::loadFailed);
        EngineOptions options;
        options.model_dir = dir_.filePath(QStringLiteral("no-such-model")).toStdString();
        bridge.loadModel(options);
        QVERIFY(failed.wait(5000));
        QVERIFY(failed.at(0).at(1).toString().contains(QStringLiteral("no-such-model")));
        QVERIFY(!bridge.hasEngine());
        QCOMPARE(bridge.submit(Request{}), Ticket(0));
    }

    void cancelledLoadIsDiscarded() {
        EngineBridge bridge([](const EngineOptions& o) {
            QThread::msleep(300);
            return test::FakeEngine::create(o);
        });
        QSignalSpy finished(&bridge, &EngineBridge::loadFinished);
        QSignalSpy cancelled(&bridge, &EngineBridge::loadCancelled);
        EngineOptions options;
        options.model_dir = model_.toStdString();
        bridge.loadModel(options);
        QVERIFY(bridge.isLoading());
        bridge.cancelLoad();
        QCOMPARE(cancelled.count(), 1);
        QTest::qWait(600);
        QCOMPARE(finished.count(), 0);
        QVERIFY(!bridge.hasEngine());
    }

    void adaptersLoadAndFailOffTheGuiThread() {
        auto bridge = loadedBridge();
        QVERIFY(bridge);
        QSignalSpy loaded(bridge.get(), &EngineBridge::adapterLoaded);
        QSignalSpy failed(bridge.get(), &EngineBridge::adapterFailed);
        bridge->loadAdapter(QStringLiteral("good"), test::makeFakeAdapterDir(dir_.path(), QStringLiteral("good")));
        bridge->loadAdapter(QStringLiteral("bad"), dir_.filePath(QStringLiteral("nothing-here")));
        QTRY_VERIFY_WITH_TIMEOUT(loaded.count() == 1 && failed.count() == 1, 5000);
        QCOMPARE(QString::fromStdString(loaded.at(0).at(0).value<AdapterInfo>().name), QStringLiteral("good"));
        QVERIFY(failed.at(0).at(2).toString().contains(QStringLiteral("adapter_config.json")));
        QCOMPARE(bridge->adapters().size(), size_t(1));
    }
};

QTEST_GUILESS_MAIN(BridgeFakeEngineTest)
#include "test_bridge_fake_engine.moc"
