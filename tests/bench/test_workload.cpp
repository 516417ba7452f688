// The bench workload file and the figures of a run, without an engine: what a file yields
// (prompts, lengths, params, adapters, arrival times), that writing it back reads the same, that
// its errors name the file (and the line, for JSON Lines), and the figures' definitions on a
// hand-made step stream.
#include <QtTest>

#include <sstream>

#include "lorascope/bench_report.h"
#include "lorascope/error.h"
#include "lorascope/workload.h"

using namespace lorascope;

namespace {

const char* const kSynthetic = R"({
  "name": "mix", "params": {"ignore_eos": true, "max_new_tokens": 9},
  "synthetic": {"count": 12, "prompt_tokens": [3, 7], "max_new_tokens": [2, 5], "seed": 4, "min_id": 5},
  "adapters": ["", "a", "b"],
  "params_mix": [{}, {"num_beams": 2}],
  "arrival": {"kind": "bursts", "size": 5, "interval_s": 0.5}})";

QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

}  // namespace

class BenchWorkloadTest : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void syntheticWorkloadYieldsItsRequests() {
        const Workload w = parse_workload(kSynthetic, "mix.json");
        QCOMPARE(QString::fromStdString(w.name), QStringLiteral("mix"));
        const std::vector<Request> r = workload_requests(w, 100);
        QCOMPARE(int(r.size()), 12);
        for (size_t i = 0; i < r.size(); ++i) {
            QVERIFY(r[i].input_ids.size() >= 3 && r[i].input_ids.size() <= 7);
            for (int64_t id : r[i].input_ids) QVERIFY(id >= 5 && id < 100);
            // The synthetic range wins over the default params; the rest of the defaults stay.
            QVERIFY(*r[i].params.max_new_tokens >= 2 && *r[i].params.max_new_tokens <= 5);
            QCOMPARE(r[i].params.ignore_eos.value_or(false), true);
            QCOMPARE(r[i].adapter, std::string(i % 3 == 0 ? "" : i % 3 == 1 ? "a" : "b"));
            QCOMPARE(r[i].params.num_beams.value_or(1), i % 2 == 0 ? int64_t(1) : int64_t(2));
        }
        // The same file, the same requests; another seed, other prompts.
        const std::vector<Request> again = workload_requests(parse_workload(kSynthetic, "mix.json"), 100);
        for (size_t i = 0; i < r.size(); ++i) QCOMPARE(again[i].input_ids, r[i].input_ids);
        Workload other = w;
        other.synthetic->seed = 5;
        QVERIFY(workload_requests(other, 100)[0].input_ids != r[0].input_ids);
    }

    void writtenWorkloadReadsBackTheSame() {
        const Workload w = parse_workload(kSynthetic, "mix.json");
        const Workload back = parse_workload(workload_to_json(w), "back.json");
        const std::vector<Request> a = workload_requests(w, 100), b = workload_requests(back, 100);
        QCOMPARE(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(b[i].input_ids, a[i].input_ids);
            QCOMPARE(b[i].adapter, a[i].adapter);
            QCOMPARE(b[i].params.max_new_tokens, a[i].params.max_new_tokens);
            QCOMPARE(b[i].params.num_beams, a[i].params.num_beams);
        }
        QCOMPARE(back.arrival.kind, ArrivalKind::Bursts);
        QCOMPARE(back.arrival.burst_size, int64_t(5));
        const Workload jsonl = parse_jsonl_prompts("{\"prompt\": \"x y\", \"adapter\": \"a\", \"id\": \"p1\"}\n\n"
                                                   "{\"input_ids\": [7, 8], \"params\": {\"num_beams\": 3}}\n",
                                                   "p.jsonl");
        const Workload jsonl_back = parse_workload(workload_to_json(jsonl), "p.json");
        const std::vector<Request> j = workload_requests(jsonl_back, 100);
        QCOMPARE(int(j.size()), 2);
        QCOMPARE(*j[0].prompt, std::string("x y"));
        QCOMPARE(j[0].adapter, std::string("a"));
        QCOMPARE(j[0].client_id, std::string("p1"));
        QCOMPARE(j[1].input_ids, (std::vector<int64_t>{7, 8}));
        QCOMPARE(*j[1].params.num_beams, int64_t(3));
    }

    void arrivalTimes() {
        WorkloadArrival all;
        QCOMPARE(arrival_times_s(all, 3), (std::vector<double>{0, 0, 0}));
        WorkloadArrival bursts;
        bursts.kind = ArrivalKind::Bursts;
        bursts.burst_size = 2;
        bursts.burst_interval_s = 0.5;
        QCOMPARE(arrival_times_s(bursts, 5), (std::vector<double>{0, 0, 0.5, 0.5, 1.0}));
        WorkloadArrival poisson;
        poisson.kind = ArrivalKind::Poisson;
        poisson.rate = 4;
        poisson.seed = 3;
        const std::vector<double> t = arrival_times_s(poisson, 20000);
        QCOMPARE(arrival_times_s(poisson, 20000), t);
        QVERIFY(t.front() > 0);
        for (size_t i = 1; i < t.size(); ++i) QVERIFY(t[i] >= t[i - 1]);
        // 20,000 gaps of mean 1/4 s (a fixed seed: the same numbers every run).
        QVERIFY(std::abs(t.back() / double(t.size()) - 0.25) < 0.01);
    }

    void errorsNameTheFile() {
        QVERIFY(errorOf([] { parse_workload("{", "w.json"); }).startsWith(QStringLiteral("w.json: malformed JSON")));
        QVERIFY(errorOf([] { parse_workload(R"({"synthetic": {"count": 2}, "arrival": {"kind": "sometimes"}})", "w.json"); })
                    .contains(QStringLiteral("w.json: arrival kind must be")));
        QVERIFY(errorOf([] { parse_workload(R"({"synthetic": {"count": 2, "max_new_tokens": [5, 2]}})", "w.json"); })
                    .contains(QStringLiteral("max_new_tokens")));
        QVERIFY(errorOf([] { parse_workload(R"({"requests": [{"adapter": "a"}]})", "w.json"); })
                    .contains(QStringLiteral("needs \"prompt\" or \"input_ids\"")));
        QVERIFY(errorOf([] { parse_jsonl_prompts("{\"prompt\": \"a\"}\n{oops\n", "p.jsonl"); }).startsWith(QStringLiteral("p.jsonl:2: ")));
        QVERIFY(errorOf([] { parse_jsonl_prompts("\n\n", "p.jsonl"); }).contains(QStringLiteral("no prompts")));
        QVERIFY(errorOf([] { read_workload("/nonexistent/w.json"); }).startsWith(QStringLiteral("/nonexistent/w.json: cannot open")));
        const Workload w = parse_workload(R"({"synthetic": {"count": 2, "min_id": 500}})", "w.json");
        QVERIFY(errorOf([&] { workload_requests(w, 100); }).contains(QStringLiteral("outside the model's vocabulary")));
    }

    void figuresFollowTheirDefinitions() {
        QCOMPARE(percentile({}, 50), 0.0);
        QCOMPARE(percentile({4, 1, 3, 2}, 50), 2.5);
        QCOMPARE(percentile({1, 2, 3, 4, 5}, 95), 4.8);
        std::vector<StepStats> steps(3);
        const int64_t rows[] = {2, 4, 3}, padded[] = {6, 0, 2}, prefill[] = {10, 0, 4}, decode[] = {2, 4, 3}, kv[] = {100, 300, 200};
        for (int i = 0; i < 3; ++i) {
            steps[size_t(i)].rows = rows[i];
            steps[size_t(i)].padded_tokens = padded[i];
            steps[size_t(i)].prefill_tokens = prefill[i];
            steps[size_t(i)].decode_tokens = decode[i];
            steps[size_t(i)].kv_bytes_allocated = kv[i];
            steps[size_t(i)].wall_ms = 1.0 + i;
        }
        std::map<RequestId, RequestTiming> timings;
        timings[1] = {0, 10, 30, 30, 2, {20}, true, FinishReason::Length, {}};
        timings[2] = {5, 25, 45, 50, 3, {10, 10}, true, FinishReason::Eos, {}};
        timings[3] = {5, -1, -1, 6, 0, {}, true, FinishReason::Error, "bad"};
        const BenchFigures f = compute_figures(steps, timings, 2.0);
        QCOMPARE(f.steps, int64_t(3));
        QCOMPARE(f.mean_batch_rows, 3.0);
        QCOMPARE(f.padding_share, 8.0 / 31.0);   // padded / (prefill + decode + padded)
        QCOMPARE(f.peak_kv_bytes, int64_t(300));
        QCOMPARE(f.generated_tokens, int64_t(5));
        QCOMPARE(f.tokens_per_s, 2.5);
        QCOMPARE(f.ttft_p50_ms, 15.0);       // 10 and 20
        QCOMPARE(f.ttft_mean_ms, 15.0);      // the request without a token has no TTFT
        QCOMPARE(f.per_token_p50_ms, 10.0);  // 20, 10, 10
        QCOMPARE(f.failed_requests, int64_t(1));
        QCOMPARE(QString::fromStdString(f.first_error), QStringLiteral("bad"));
        QCOMPARE(f.prefill_steps, int64_t(2));
        QCOMPARE(f.prefill_step_ms, 1.0 + 3.0);
        QCOMPARE(f.decode_step_ms, 2.0);
    }

    // End-to-end, queue and goodput (lorascope/bench_report.h) on hand-made request records, and
    // the requests CSV that carries them.
    void latencyFiguresFollowTheirDefinitions() {
        std::vector<StepStats> steps(4);
        const int64_t decode[] = {1, 3, 3, 2}, queue[] = {2, 1, 0, 0};
        for (size_t i = 0; i < 4; ++i) {
            steps[i].decode_tokens = steps[i].rows = decode[i];
            steps[i].queue_depth = queue[i];
        }
        std::map<RequestId, RequestTiming> timings;
        // submitted, first, last, finished; tokens; gaps; finished, reason, error; queue
        timings[1] = {0, 10, 30, 30, 3, {10, 10}, true, FinishReason::Length, {}, 4};     // ttft 10, tpot 10, e2e 30
        timings[2] = {5, 45, 50, 50, 2, {5}, true, FinishReason::Length, {}, 20};         // ttft 40, tpot 5, e2e 45
        timings[3] = {5, 15, 15, 15, 1, {}, true, FinishReason::Eos, {}, 2};              // ttft 10, tpot 0, e2e 10
        timings[4] = {6, 16, 56, 56, 2, {40}, true, FinishReason::Length, {}, 8};         // ttft 10, tpot 40, e2e 50
        timings[5] = {6, -1, -1, 7, 0, {}, true, FinishReason::Error, "bad", 1};          // no token: never good
        const BenchFigures f = compute_figures(steps, timings, 2.0, LatencyTargets{20, 12});
        QCOMPARE(f.e2e_p50_ms, 37.5);                    // 10, 30, 45, 50
        QCOMPARE(f.e2e_mean_ms, 33.75);
        QCOMPARE(f.ttft_mean_ms, 17.5);                  // 10, 40, 10, 10
        QCOMPARE(f.e2e_p99_ms, 45 + 0.97 * 5);
        QCOMPARE(f.queue_p50_ms, 4.0);                   // 1, 2, 4, 8, 20
        QCOMPARE(f.queue_p95_ms, 8 + 0.8 * 12);
        QCOMPARE(f.goodput_requests, int64_t(2));        // 1 and 3: 2's TTFT and 4's TPOT are over
        QCOMPARE(f.goodput_share, 0.4);
        QCOMPARE(f.goodput_per_s, 1.0);
        QCOMPARE(compute_figures(steps, timings, 2.0).goodput_requests, int64_t(4));   // no targets: all with tokens
        QCOMPARE(f.steps_while_queued, int64_t(2));
        QCOMPARE(f.rows_while_queued, 2.0);              // decoding rows of steps 0 and 1
        std::ostringstream csv;
        write_requests_csv(csv, timings);
        const QStringList lines = QString::fromStdString(csv.str()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 6);
        QCOMPARE(lines[0], QStringLiteral("id,tokens,reason,submitted_ms,queue_ms,ttft_ms,tpot_ms,e2e_ms"));
        QCOMPARE(lines[2], QStringLiteral("2,2,length,5,20,40,5,45"));
        QCOMPARE(lines[5], QStringLiteral("5,0,error,6,1,,,"));
    }
};

QTEST_APPLESS_MAIN(BenchWorkloadTest)
#include "test_workload.moc"
