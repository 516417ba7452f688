// `lorascope-cli bench` on the demo pack's T5 under each batching policy (continuous with the
// budget in time, continuous under a time-per-output-token target, static, continuous with the
// queue's end packed): every request runs to
// its length, and the report's request-latency figures (end-to-end, queue, TTFT percentiles,
// goodput) and rows-while-queued are exactly what its --requests-csv and --steps-csv records give.
// No timing assertions: whatever the times were, the report must agree with the records.
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "cli_process.h"
#include "csv_rows.h"
#include "lorascope/bench_report.h"

using namespace lorascope;

namespace {

constexpr int kRequests = 24;

using test::readCsv;

double number(const test::CsvRow& row, const char* column) { return test::csvNumber(row, column); }
bool same(double a, double b) { return test::sameNumber(a, b); }

}  // namespace

class BenchCliTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private Q_SLOTS:
    void reportAgreesWithRecords_data() {
        QTest::addColumn<QStringList>("policy");
        QTest::newRow("continuous") << QStringList{};
        QTest::newRow("target") << QStringList{QStringLiteral("--tpot-target-ms"), QStringLiteral("3")};
        QTest::newRow("static") << QStringList{QStringLiteral("--batching"), QStringLiteral("static")};
        QTest::newRow("packed") << QStringList{QStringLiteral("--queue-order"), QStringLiteral("pack")};
    }

    void reportAgreesWithRecords() {
        QFETCH(QStringList, policy);
        const QString workload = dir_.filePath(QStringLiteral("w.json")), steps_csv = dir_.filePath(QStringLiteral("s.csv")),
                      requests_csv = dir_.filePath(QStringLiteral("r.csv"));
        std::ofstream(workload.toStdString())
            << R"({"name": "mix", "params": {"ignore_eos": true},
                   "synthetic": {"count": 24, "prompt_tokens": [4, 40], "max_new_tokens": [2, 24], "seed": 5}})";
        const double ttft_target = 60, tpot_target = 4;
        QStringList args = {QStringLiteral("bench"), QStringLiteral("--demo"), QStringLiteral("--demo-dir"),
                            QStringLiteral(LORASCOPE_TEST_DEMO_DIR), QStringLiteral("--workload"), workload,
                            QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--max-batch-size"),
                            QStringLiteral("8"), QStringLiteral("--steps-csv"), steps_csv, QStringLiteral("--requests-csv"),
                            requests_csv, QStringLiteral("--goodput-ttft-ms"), QString::number(ttft_target),
                            QStringLiteral("--goodput-tpot-ms"), QString::number(tpot_target)};
        const test::CliResult r = test::run_cli_command(args + policy, 240000);
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const QJsonObject report = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
        QCOMPARE(report[QStringLiteral("requests")].toInt(), kRequests);
        QCOMPARE(report[QStringLiteral("failed_requests")].toInt(), 0);
        const bool packed = policy.contains(QStringLiteral("pack"));
        QCOMPARE(report[QStringLiteral("queue_order")].toString(), packed ? QStringLiteral("pack") : QStringLiteral("arrival"));

        const auto requests = readCsv(requests_csv);
        const auto steps = readCsv(steps_csv);
        QCOMPARE(int(requests.size()), kRequests);
        QCOMPARE(int(steps.size()), report[QStringLiteral("steps")].toInt());
        // Tokens: per request, summed, and one per decoding row of each step.
        int64_t tokens = 0, decoded = 0, queued_steps = 0, queued_rows = 0;
        std::vector<double> e2e, queue, ttft;
        int64_t good = 0;
        std::set<QString> ids, row_ids;
        std::map<QString, int64_t> length;   // tokens of each request (EOS ignored: its max_new_tokens)
        std::vector<QString> end_joins;       // joined while at most 8 (the rows) waited, in order
        std::vector<QString> first_joins;     // joined in the first step
        int64_t waiting = kRequests;          // before the step: all arrive at once
        for (const auto& q : requests) {
            QCOMPARE(q.at(QStringLiteral("reason")), QStringLiteral("length"));
            ids.insert(q.at(QStringLiteral("id")));
            const int64_t n = q.at(QStringLiteral("tokens")).toLongLong();
            length[q.at(QStringLiteral("id"))] = n;
            QVERIFY(n >= 2 && n <= 24);
            tokens += n;
            e2e.push_back(number(q, "e2e_ms"));
            queue.push_back(number(q, "queue_ms"));
            ttft.push_back(number(q, "ttft_ms"));
            // Admitted before its first token; the last token is the first plus the rest's gaps.
            QVERIFY(number(q, "queue_ms") <= number(q, "ttft_ms"));
            QVERIFY(same(number(q, "e2e_ms"), number(q, "ttft_ms") + number(q, "tpot_ms") * double(n - 1)));
            good += number(q, "ttft_ms") <= ttft_target && number(q, "tpot_ms") <= tpot_target;
        }
        for (const auto& s : steps) {
            QCOMPARE(s.at(QStringLiteral("threads")).toInt(), 1);  // --threads 1: nothing to adapt
            decoded += s.at(QStringLiteral("decode_tokens")).toLongLong();
            if (s.at(QStringLiteral("queue_depth")).toLongLong() > 0) {
                ++queued_steps;
                queued_rows += s.at(QStringLiteral("decode_tokens")).toLongLong();
            }
            for (const QString& id : s.at(QStringLiteral("row_requests")).split(QLatin1Char(';'), Qt::SkipEmptyParts))
                if (row_ids.insert(id).second) {
                    if (waiting <= 8) end_joins.push_back(id);
                    if (s.at(QStringLiteral("step")).toInt() == 0) first_joins.push_back(id);
                }
            waiting = s.at(QStringLiteral("queue_depth")).toLongLong();
        }
        // All 24 arrive together, 8 rows: packed, the first 8 to join are the 8 shortest, and those
        // that join once no more than the rows wait (the queue's end) join longest first; arrival
        // order (the default) puts neither order on seed 5's lengths.
        QVERIFY(end_joins.size() >= 2);
        bool longest_first = true;
        for (size_t i = 1; i < end_joins.size(); ++i)
            longest_first = longest_first && length[end_joins[i - 1]] >= length[end_joins[i]];
        std::vector<int64_t> sorted;
        for (const auto& [id, n] : length) sorted.push_back(n);
        std::sort(sorted.begin(), sorted.end());
        bool shortest_first = first_joins.size() == 8;
        for (const QString& id : first_joins) shortest_first = shortest_first && length[id] <= sorted[7];
        if (packed || policy.isEmpty()) QCOMPARE(shortest_first, packed);
        if (packed || policy.isEmpty()) QCOMPARE(longest_first, packed);
        QCOMPARE(report[QStringLiteral("steps_by_threads")].toObject()[QStringLiteral("1")].toInt(), int(steps.size()));
        QCOMPARE(report[QStringLiteral("thread_policy")].toString(), QStringLiteral("adaptive"));
        QCOMPARE(tokens, int64_t(report[QStringLiteral("generated_tokens")].toInteger()));
        QCOMPARE(decoded, tokens);
        QVERIFY(ids == row_ids);

        const QJsonObject e2e_ms = report[QStringLiteral("e2e_ms")].toObject(), queue_ms = report[QStringLiteral("queue_ms")].toObject(),
                          ttft_ms = report[QStringLiteral("ttft_ms")].toObject();
        for (const auto& [name, p] : {std::pair<const char*, double>{"p50", 50}, {"p95", 95}, {"p99", 99}}) {
            QVERIFY2(same(e2e_ms[QLatin1String(name)].toDouble(), percentile(e2e, p)), name);
            QVERIFY2(same(queue_ms[QLatin1String(name)].toDouble(), percentile(queue, p)), name);
        }
        QVERIFY(same(ttft_ms[QStringLiteral("p50")].toDouble(), percentile(ttft, 50)));
        QVERIFY(same(ttft_ms[QStringLiteral("p95")].toDouble(), percentile(ttft, 95)));
        // The means beside them, over the same requests.
        QVERIFY(same(ttft_ms[QStringLiteral("mean")].toDouble(), test::meanOf(ttft)));
        QVERIFY(same(e2e_ms[QStringLiteral("mean")].toDouble(), test::meanOf(e2e)));

        const QJsonObject goodput = report[QStringLiteral("goodput")].toObject();
        QCOMPARE(goodput[QStringLiteral("ttft_target_ms")].toDouble(), ttft_target);
        QCOMPARE(goodput[QStringLiteral("tpot_target_ms")].toDouble(), tpot_target);
        QCOMPARE(goodput[QStringLiteral("requests")].toInteger(), qint64(good));

        const QJsonObject queued = report[QStringLiteral("rows_while_queued")].toObject();
        QCOMPARE(queued[QStringLiteral("steps")].toInteger(), qint64(queued_steps));
        QVERIFY(queued_steps > 0);   // 24 requests at once, 8 rows: the queue holds requests for a while
        QVERIFY(same(queued[QStringLiteral("mean_decoding_rows")].toDouble(), double(queued_rows) / double(queued_steps)));
    }

    // Under a target, the first step (nothing decodes yet) prefills its newcomers' whole prompts, chunk
    // after chunk, and every one of them decodes in it: with one 32-token chunk each, the demo BLOOM's
    // 40-90-token prompts left most of their tokens deferred and their rows waiting.
    void anIdleBatchUnderATargetPrefillsWholePrompts() {
        const QString workload = dir_.filePath(QStringLiteral("idle.json")), steps_csv = dir_.filePath(QStringLiteral("idle.csv"));
        std::ofstream(workload.toStdString())
            << R"({"name": "idle", "params": {"ignore_eos": true},
                   "synthetic": {"count": 6, "prompt_tokens": [40, 90], "max_new_tokens": [3, 6], "seed": 3}})";
        const test::CliResult r = test::run_cli_command(
            {QStringLiteral("bench"), QStringLiteral("--model"), QStringLiteral(LORASCOPE_TEST_DEMO_DIR "/bloom"),
             QStringLiteral("--workload"), workload, QStringLiteral("--threads"), QStringLiteral("1"),
             QStringLiteral("--tpot-target-ms"), QStringLiteral("100000"), QStringLiteral("--steps-csv"), steps_csv},
            240000);
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const auto steps = readCsv(steps_csv);
        QVERIFY(!steps.empty());
        const auto& first = steps.front();
        QVERIFY(number(first, "prefill_tokens") >= 39);   // a whole prompt at least, past one chunk
        QCOMPARE(number(first, "prefill_tokens_deferred"), 0.0);
        QCOMPARE(number(first, "decode_tokens"), number(first, "rows"));
        QCOMPARE(number(first, "bulk_prefill"), 0.0);   // an idle batch's step is unlimited, not a bulk step
        // Why each step prefilled what it did: the row limit held every row, the prefill was
        // planned against the target over a margin within [1, 1.5], and the rows for decoding steps
        // of the target x min(1, 1.05 / a margin within [1, 1.5]) (batching/time_budget.h).
        for (const auto& s : steps) {
            QVERIFY(number(s, "row_limit") >= number(s, "rows"));
            QVERIFY(number(s, "prefill_margin") >= 1.0 && number(s, "prefill_margin") <= 1.5);
            QVERIFY2(number(s, "row_plan_ms") >= 100000 * 1.05 / 1.5 && number(s, "row_plan_ms") <= 100000,
                     qPrintable(QString::number(number(s, "row_plan_ms"))));
        }
    }

    // --thread-policy fixed keeps every step on --threads; a bad value (of it, or of --queue-order)
    // is refused by name.
    void threadPolicyFixedKeepsTheCount() {
        const QString workload = dir_.filePath(QStringLiteral("t.json")), steps_csv = dir_.filePath(QStringLiteral("t.csv"));
        std::ofstream(workload.toStdString())
            << R"({"name": "t", "params": {"ignore_eos": true},
                   "synthetic": {"count": 4, "prompt_tokens": [4, 8], "max_new_tokens": [3, 3], "seed": 1}})";
        const QStringList args = {QStringLiteral("bench"), QStringLiteral("--demo"), QStringLiteral("--demo-dir"),
                                  QStringLiteral(LORASCOPE_TEST_DEMO_DIR), QStringLiteral("--workload"), workload,
                                  QStringLiteral("--threads"), QStringLiteral("2"), QStringLiteral("--steps-csv"), steps_csv};
        const test::CliResult r =
            test::run_cli_command(args + QStringList{QStringLiteral("--thread-policy"), QStringLiteral("fixed")}, 240000);
        QVERIFY2(r.exit_code == 0, r.err.c_str());
        const QJsonObject report = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
        QCOMPARE(report[QStringLiteral("thread_policy")].toString(), QStringLiteral("fixed"));
        const auto steps = readCsv(steps_csv);
        QVERIFY(!steps.empty());
        for (const auto& s : steps) {
            QCOMPARE(s.at(QStringLiteral("threads")).toInt(), 2);
            QCOMPARE(number(s, "row_limit"), 32.0);     // no target: max_batch_size
            QCOMPARE(number(s, "prefill_margin"), 0.0);
            QCOMPARE(number(s, "row_plan_ms"), 0.0);
        }
        QCOMPARE(report[QStringLiteral("steps_by_threads")].toObject()[QStringLiteral("2")].toInt(), int(steps.size()));

        const test::CliResult bad =
            test::run_cli_command(args + QStringList{QStringLiteral("--thread-policy"), QStringLiteral("some")}, 240000);
        QVERIFY(bad.exit_code != 0);
        QVERIFY2(bad.err.find("--thread-policy expects adaptive") != std::string::npos, bad.err.c_str());
        const test::CliResult order =
            test::run_cli_command(args + QStringList{QStringLiteral("--queue-order"), QStringLiteral("longest")}, 240000);
        QVERIFY(order.exit_code != 0);
        QVERIFY2(order.err.find("--queue-order expects arrival or pack, got 'longest'") != std::string::npos, order.err.c_str());
    }
};

QTEST_GUILESS_MAIN(BenchCliTest)
#include "test_bench_cli.moc"
