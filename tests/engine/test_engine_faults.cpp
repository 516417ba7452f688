// An engine thread that cannot die: a fault injected at each named point of a step (a sink, the
// stats listener, a decoding pass, a prefill, a cache join or leave, an adapter acquire, choosing
// the next tokens, taking one: detokenizing and stop strings) ends
// exactly the request involved with an error naming the cause, and every other request finishes
// exactly as alone (Hugging Face's greedy tokens). Afterwards the cache is consistent: the same
// prompts run again give the same tokens, and nothing is left in the cache once they are done.
#include <QtTest>

#include <atomic>
#include <new>

#include "collecting_sink.h"
#include "engine/fault_injection.h"
#include "engine_test_support.h"
#include "lorascope/engine.h"

using namespace lorascope;
using engine_detail::FaultPoint;
using test::CollectingSink;

namespace {

// Clears the process-wide hook however the test ends.
struct HookGuard {
    ~HookGuard() { engine_detail::set_fault_hook(nullptr); }
};

bool contains(const std::vector<RequestId>& ids, RequestId id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

class TestEngineFaults : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void a_fault_ends_only_the_request_involved_data() {
        QTest::addColumn<QString>("variant");
        QTest::addColumn<int>("point_index");
        for (const char* v : {"t5_v1_1", "bloom_4h"}) {
            for (FaultPoint p : {FaultPoint::OnToken, FaultPoint::OnFinish, FaultPoint::StatsListener,
                                 FaultPoint::DecodeStep, FaultPoint::Prefill, FaultPoint::CacheJoin,
                                 FaultPoint::CacheLeave, FaultPoint::Choose, FaultPoint::Accept}) {
                const QByteArray tag = QByteArray(v) + " " + engine_detail::to_string(p);
                QTest::newRow(tag.constData()) << QString(v) << static_cast<int>(p);
            }
        }
    }

    void a_fault_ends_only_the_request_involved() {
        QFETCH(QString, variant);
        QFETCH(int, point_index);
        const auto point = static_cast<FaultPoint>(point_index);
        HookGuard guard;
        const test::Variant v = test::load_variant(variant.toStdString());
        const auto& prompts = v.records["prompts"];
        const auto& greedy = v.records["greedy"];
        const int64_t max_new = v.records["max_new_tokens"].get<int64_t>();
        const size_t n = prompts.size();
        QVERIFY(n >= 3);

        // A small prefill budget: prefill spans several steps, with decoding rows beside it.
        auto options = test::engine_options(v.dir);
        options.prefill_budget_tokens = 4;
        options.prefill_chunk_tokens = 4;
        auto engine = Engine::create(options);
        std::atomic<RequestId> victim{0};
        std::atomic<int> fired{0};
        engine_detail::set_fault_hook([&](FaultPoint p, const std::vector<RequestId>& ids) {
            if (p != point) return;
            if (p != FaultPoint::StatsListener && !contains(ids, victim.load())) return;
            if (p == FaultPoint::CacheLeave && fired.load() > 0) return;  // once: its retry succeeds
            ++fired;
            if (p == FaultPoint::DecodeStep) throw std::bad_alloc();
            throw std::runtime_error("injected fault");
        });
        std::atomic<int64_t> steps_seen{0};
        engine->set_stats_listener([&](const StepStats&) { ++steps_seen; });
        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        std::vector<RequestId> ids;
        for (size_t i = 0; i < n; ++i) ids.push_back(engine->submit(test::greedy_request(prompts[i], max_new), sink));
        victim = ids[1];
        engine->set_paused(false);
        const bool victim_silent = point == FaultPoint::OnFinish;  // its sink "threw" before recording
        QVERIFY(sink->wait_finished(victim_silent ? n - 1 : n));
        engine->wait_idle();
        QVERIFY2(fired.load() > 0, "the fault point was never reached");

        for (size_t i = 0; i < n; ++i) {
            const auto rec = sink->get(ids[i]);
            QVERIFY(!rec.token_after_finish);
            const auto want = greedy[i].get<std::vector<int64_t>>();
            if (i != 1 || point == FaultPoint::StatsListener || point == FaultPoint::CacheLeave) {
                QCOMPARE(rec.finishes.size(), size_t(1));
                QCOMPARE(rec.finishes[0].token_ids, want);
                continue;
            }
            if (victim_silent) {
                QCOMPARE(rec.finishes.size(), size_t(0));
                continue;
            }
            QCOMPARE(rec.finishes.size(), size_t(1));
            const auto& f = rec.finishes[0];
            QCOMPARE(f.reason, FinishReason::Error);
            const char* cause = point == FaultPoint::OnToken      ? "sink threw"
                                : point == FaultPoint::DecodeStep ? "decoding failed"
                                : point == FaultPoint::Prefill    ? "prefill failed"
                                : point == FaultPoint::Choose     ? "choosing the next token failed"
                                : point == FaultPoint::Accept     ? "taking the chosen token failed"
                                                                  : "joining the batch failed";
            QVERIFY2(f.error.find(cause) != std::string::npos, f.error.c_str());
            QVERIFY(f.token_ids.size() <= want.size());
            QVERIFY(std::equal(f.token_ids.begin(), f.token_ids.end(), want.begin()));
        }

        // The cache is consistent: the same prompts again, no fault, give the same tokens, and the
        // last step leaves no block in use.
        engine_detail::set_fault_hook(nullptr);
        std::atomic<int64_t> last_used{-1};
        engine->set_stats_listener([&](const StepStats& s) { last_used = s.kv_blocks_used; });
        auto again = std::make_shared<CollectingSink>();
        std::vector<RequestId> second;
        for (size_t i = 0; i < n; ++i) second.push_back(engine->submit(test::greedy_request(prompts[i], max_new), again));
        QVERIFY(again->wait_finished(n));
        engine->wait_idle();
        engine->set_stats_listener(nullptr);
        for (size_t i = 0; i < n; ++i) QCOMPARE(again->get(second[i]).finishes.at(0).token_ids, greedy[i].get<std::vector<int64_t>>());
        QCOMPARE(last_used.load(), int64_t(0));
    }

    // An adapter that cannot be pinned at admission fails its request; the base-model requests
    // beside it decode as alone.
    void adapter_acquire_fault_ends_only_its_request() {
        HookGuard guard;
        const std::string dir = std::string(LORASCOPE_TEST_DEMO_DIR) + "/t5";
        auto engine = test::make_engine(dir);
        engine->load_adapter("upper", dir + "/adapters/upper");
        const std::vector<std::string> texts = {"sort: d b a c", "reverse: one two", "upper: shout this"};
        auto text_request = [](const std::string& text, const std::string& adapter) {
            Request r;
            r.prompt = text;
            r.adapter = adapter;
            r.params.max_new_tokens = 12;
            return r;
        };
        std::vector<std::vector<int64_t>> solo;
        for (const auto& t : texts) {
            auto sink = std::make_shared<CollectingSink>();
            const RequestId id = engine->submit(text_request(t, ""), sink);
            QVERIFY(sink->wait_until(id));
            solo.push_back(sink->get(id).finishes.at(0).token_ids);
        }
        std::atomic<RequestId> victim{0};
        engine_detail::set_fault_hook([&](FaultPoint p, const std::vector<RequestId>& ids) {
            if (p == FaultPoint::AdapterAcquire && contains(ids, victim.load())) throw std::runtime_error("injected fault");
        });
        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        std::vector<RequestId> ids;
        for (const auto& t : texts) ids.push_back(engine->submit(text_request(t, ""), sink));
        victim = engine->submit(text_request(texts[2], "upper"), sink);
        engine->set_paused(false);
        QVERIFY(sink->wait_finished(texts.size() + 1));
        for (size_t i = 0; i < texts.size(); ++i) QCOMPARE(sink->get(ids[i]).finishes.at(0).token_ids, solo[i]);
        const auto failed = sink->get(victim).finishes.at(0);
        QCOMPARE(failed.reason, FinishReason::Error);
        QVERIFY2(failed.error.find("injected fault") != std::string::npos, failed.error.c_str());
    }
};

QTEST_GUILESS_MAIN(TestEngineFaults)
#include "test_engine_faults.moc"
