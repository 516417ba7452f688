// Item models under QAbstractItemModelTester while the fake engine streams through the bridge,
// one dataChanged per drain tick; prompt files, result export and the HF cache scan.
#include <QAbstractItemModelTester>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "model/adapter_list_model.h"
#include "engine_link/engine_bridge.h"
#include "engine_link/step_reason.h"
#include "fake_engine.h"
#include "model/hf_cache.h"
#include "lorascope/error.h"
#include "lorascope/finish_json.h"
#include "requests/prompt_source.h"
#include "requests/request_table_model.h"
#include "requests/results_export.h"
#include "inspector/step_stats_model.h"
#include "ui_test_support.h"

using namespace lorascope;
using namespace lorascope::ui;

class ModelsFakeEngineTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private Q_SLOTS:
    // Why a step prefilled what it did, as the step table's tooltip and the lab's timeline say it:
    // under a target the row limit with the decoding step it planned for, the prefill's margin, a
    // bulk step; without one the row limit alone.
    void stepReasonSaysWhy() {
        StepStats s;
        s.row_limit = 24;
        s.row_plan_ms = 17.94;
        s.prefill_margin = 1.1;
        s.bulk_prefill = true;
        QCOMPARE(stepPrefillReason(s), QStringLiteral("row limit 24 (decoding planned for 17.9 ms); prefill planned against the "
                                                      "target / 1.10; bulk step: whole prompts past the plan"));
        StepStats none;
        none.row_limit = 32;
        QCOMPARE(stepPrefillReason(none), QStringLiteral("row limit 32"));
    }

    // A request with num_return_sequences > 1: its detail pane shows the text, then the others.
    void detailTextShowsTheOtherReturnedSequences() {
        RequestRecord r;
        r.text = QStringLiteral("best");
        QCOMPARE(r.detailText(), QStringLiteral("best"));
        r.sequences = {{"best", {5, 2}, -0.25, {}, {}}, {"second", {6, 2}, -0.5, {}, {}}, {"third", {7, 7, 2}, -1.125, {}, {}}};
        QCOMPARE(r.detailText(), QStringLiteral("best\n\n[sequence 2 of 3, score -0.5000]\nsecond"
                                                "\n\n[sequence 3 of 3, score -1.1250]\nthird"));
        r.sequences = {{"best", {5, 2}, std::nullopt, {}, {}}, {"other", {6, 2}, std::nullopt, {}, {}}};   // sampled: no score
        QCOMPARE(r.detailText(), QStringLiteral("best\n\n[sequence 2 of 2]\nother"));
        // A failure keeps what streamed before it (issue 31 item 2): the text, then the error.
        r.error = QStringLiteral("boom");
        QCOMPARE(r.detailText(), QStringLiteral("best\n\n\u26A0 boom"));
        QCOMPARE(r.outputText(), QStringLiteral("best  \u26A0 boom"));
        r.text.clear();
        QCOMPARE(r.detailText(), QStringLiteral("boom"));
    }

    void modelsPassTheTesterWhileStreaming() {
        EngineBridge bridge([](const EngineOptions& o) { return test::FakeEngine::create(o); });
        RequestTableModel requests;
        StepStatsModel steps(20);   // small, so trimming old steps is exercised too
        AdapterListModel adapters;
        QAbstractItemModelTester t1(&requests, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(&steps, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t3(&adapters, QAbstractItemModelTester::FailureReportingMode::QtTest);
        connect(&bridge, &EngineBridge::requestSubmitted, &requests, &RequestTableModel::addRequest);
        connect(&bridge, &EngineBridge::drained, &requests, &RequestTableModel::applyDrain);
        connect(&bridge, &EngineBridge::drained, &steps, &StepStatsModel::applyDrain);
        connect(&bridge, &EngineBridge::adapterLoaded, &adapters, &AdapterListModel::markLoaded);
        connect(&bridge, &EngineBridge::adapterFailed, &adapters, [&](const QString& n, const QString&, const QString& m) { adapters.markFailed(n, m); });
        int drains = 0, max_changes_per_drain = 0, changes = 0;
        connect(&requests, &QAbstractItemModel::dataChanged, [&] { ++changes; });
        connect(&bridge, &EngineBridge::drained, [&] {
            max_changes_per_drain = qMax(max_changes_per_drain, changes);
            changes = 0;
            ++drains;
        });
        // The models are connected first, so `changes` holds this tick's count when the lambda runs.

        QSignalSpy loaded(&bridge, &EngineBridge::loadFinished);
        EngineOptions o;
        o.model_dir = test::makeFakeModelDir(dir_.path(), QStringLiteral("m")).toStdString();
        o.max_batch_size = 4;
        bridge.loadModel(o);
        QVERIFY(loaded.wait(5000));
        adapters.markLoading(QStringLiteral("a"), test::makeFakeAdapterDir(dir_.path(), QStringLiteral("a")));
        bridge.loadAdapter(QStringLiteral("a"), test::makeFakeAdapterDir(dir_.path(), QStringLiteral("a")));
        adapters.markLoading(QStringLiteral("broken"), dir_.filePath(QStringLiteral("none")));
        bridge.loadAdapter(QStringLiteral("broken"), dir_.filePath(QStringLiteral("none")));
        QTRY_VERIFY_WITH_TIMEOUT(adapters.readyNames() == QStringList{QStringLiteral("a")} &&
                                     adapters.data(adapters.index(1, AdapterListModel::ColStatus)).toString().startsWith(QStringLiteral("invalid")), 5000);
        for (int i = 0; i < 10; ++i) {
            Request r;
            r.prompt = "streaming prompt " + std::to_string(i);
            r.adapter = i % 2 ? "a" : "";
            bridge.submit(r);
        }
        QTRY_COMPARE_WITH_TIMEOUT(requests.unfinishedCount(), 0, 10000);
        QCOMPARE(max_changes_per_drain, 1);
        QVERIFY(drains > 1);
        QCOMPARE(requests.rowCount(), 10);
        QCOMPARE(steps.rowCount(), 20);   // bounded history, newest kept
        for (const auto& r : requests.records()) {
            QCOMPARE(r.text, QString::fromStdString(test::FakeEngine::expected_text(r.prompt.toStdString(), r.adapter.toStdString(), 12)));
            QCOMPARE(r.status, RequestStatus::Finished);
            QCOMPARE(r.generatedTokens(), qint64(12));
            QVERIFY(r.ttftMs() >= 0);
        }
        QCOMPARE(requests.data(requests.index(0, RequestTableModel::ColFinish)).toString(), QStringLiteral("length"));
        requests.clearFinished();
        QCOMPARE(requests.rowCount(), 0);
    }

    void promptFilesParseAndNameTheBadLine() {
        const auto lines = promptsFromLines(QStringLiteral("one\n\n  two  \n"));
        QCOMPARE(lines.size(), size_t(2));
        QCOMPARE(lines[1].prompt, QStringLiteral("two"));
        const QByteArray jsonl = "{\"id\": \"x\", \"prompt\": \"hi\", \"adapter\": \"a\", \"params\": {\"max_new_tokens\": 5, \"stop\": \"##\", \"early_stopping\": \"never\"}}\n"
                                 "{\"prompt\": \"plain\"}\n";
        const auto items = promptsFromJsonLines(jsonl, QStringLiteral("p.jsonl"));
        QCOMPARE(items.size(), size_t(2));
        QCOMPARE(items[0].client_id, QStringLiteral("x"));
        QCOMPARE(*items[0].adapter, QStringLiteral("a"));
        QCOMPARE(*items[0].overrides.max_new_tokens, int64_t(5));
        QCOMPARE(items[0].overrides.stop->front(), std::string("##"));
        QVERIFY(items[0].overrides.early_stopping == EarlyStopping::Never);
        QVERIFY(!items[1].adapter);
        GenerationParams base;
        base.max_new_tokens = 20;
        base.top_k = 3;
        const GenerationParams merged = mergeParams(base, items[0].overrides);
        QCOMPARE(*merged.max_new_tokens, int64_t(5));
        QCOMPARE(*merged.top_k, int64_t(3));
        try {
            promptsFromJsonLines("{\"prompt\": \"ok\"}\n{\"prompt\": \"x\", \"params\": {\"tmperature\": 1}}\n", QStringLiteral("p.jsonl"));
            QFAIL("an unknown field must be refused");
        } catch (const Error& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("p.jsonl:2")), e.what());
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("tmperature")), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(Error, promptsFromJsonLines("{not json\n", QStringLiteral("q.jsonl")));
    }

    void exportWritesJsonLinesAndMarkdown() {
        RequestRecord r;
        r.client_id = QStringLiteral("7|x");
        r.prompt = QStringLiteral("say ```hi```");
        r.adapter = QStringLiteral("a");
        r.status = RequestStatus::Finished;
        r.text = QStringLiteral("hello | world");
        r.finish_reason = QStringLiteral("eos");
        r.tokens = {{5, QStringLiteral("hello"), -0.5f, false, {}}, {6, QStringLiteral(" | world"), -1.0f, false, {}}};
        const QByteArray jsonl = resultsToJsonLines({r});
        const QJsonObject o = QJsonDocument::fromJson(jsonl.trimmed()).object();
        QCOMPARE(o.value(QStringLiteral("text")).toString(), r.text);
        QCOMPARE(o.value(QStringLiteral("adapter")).toString(), QStringLiteral("a"));
        QCOMPARE(o.value(QStringLiteral("token_ids")).toArray().size(), 2);
        // The CLI's line, field for field: the core library's reader takes it back.
        QCOMPARE(o.value(QStringLiteral("generated_tokens")).toInt(), 2);
        QVERIFY(!o.contains(QStringLiteral("usage")));
        const FinishEvent back = finish_from_json(jsonl.trimmed().toStdString());
        QCOMPARE(back.reason, FinishReason::Eos);
        QCOMPARE(QString::fromStdString(back.client_id), r.client_id);
        QCOMPARE(QString::fromStdString(back.text), r.text);
        QCOMPARE(back.token_ids, (std::vector<int64_t>{5, 6}));
        QCOMPARE(back.logprobs, (std::vector<float>{-0.5f, -1.0f}));
        const QString md = resultsToMarkdown({r});
        QVERIFY(md.contains(QStringLiteral("| 7\\|x | a |")));   // escaped inside the table
        QVERIFY(md.contains(QStringLiteral("````text\nsay ```hi```\n````")));   // a fence the prompt cannot close
        QString error;
        QVERIFY(exportResults({r}, dir_.filePath(QStringLiteral("out.md")), &error));
        QVERIFY(!exportResults({r}, dir_.filePath(QStringLiteral("no/such/dir/out.jsonl")), &error));
        QVERIFY(error.contains(QStringLiteral("out.jsonl")));
    }

    void hfCacheScanListsSnapshotsWithRefs() {
        const QString hub = dir_.filePath(QStringLiteral("hub"));
        const QString snap = hub + QStringLiteral("/models--google--t5-small/snapshots/abc123");
        QVERIFY(QDir().mkpath(snap));
        test::makeFakeModelDir(hub + QStringLiteral("/models--google--t5-small/snapshots"), QStringLiteral("abc123"));
        QVERIFY(QDir().mkpath(hub + QStringLiteral("/models--google--t5-small/refs")));
        QFile ref(hub + QStringLiteral("/models--google--t5-small/refs/main"));
        QVERIFY(ref.open(QIODevice::WriteOnly));
        ref.write("abc123\n");
        ref.close();
        QVERIFY(QDir().mkpath(hub + QStringLiteral("/datasets--x--y/snapshots/r")));
        const auto found = scanHfHubCache(hub);
        QCOMPARE(found.size(), size_t(1));
        QCOMPARE(found[0].repo_id, QStringLiteral("google/t5-small"));
        QCOMPARE(found[0].revision, QStringLiteral("abc123"));
        QCOMPARE(found[0].refs, QStringList{QStringLiteral("main")});
        QVERIFY(found[0].has_config);
        qputenv("HF_HUB_CACHE", "");
        qputenv("HF_HOME", QFile::encodeName(dir_.path()));
        QCOMPARE(hfHubCacheDir(), hub);
    }
};

QTEST_GUILESS_MAIN(ModelsFakeEngineTest)
#include "test_models_fake_engine.moc"
