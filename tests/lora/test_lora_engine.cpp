// Multi-LoRA through the engine: the base model and every adapter, several prompts each, submitted
// together so that they share one heterogeneous batch, give HF + PEFT's greedy tokens, the same as
// each request run alone; statistics count rows per adapter and adapter memory; broken adapters are
// refused while requests keep running; unload waits for running requests and fails queued ones.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <mutex>
#include <thread>

#include "../engine/collecting_sink.h"
#include "lora_records.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"

using namespace lorascope;
using lorascope::test::CollectingSink;
using nlohmann::json;

namespace {

std::unique_ptr<Engine> make_engine(const test::LoraBase& base, bool load_all = true) {
    EngineOptions options;
    options.model_dir = base.model_dir;
    options.threads = 1;
    options.max_batch_size = 64;
    auto engine = Engine::create(options);
    if (load_all)
        for (const auto& a : base.adapter_names()) engine->load_adapter(a, base.adapter_dir(a));
    return engine;
}

Request greedy_request(const json& rec, size_t run, size_t prompt) {
    Request r;
    r.input_ids = rec["prompts"][prompt].get<std::vector<int64_t>>();
    r.adapter = rec["runs"][run]["adapter"].get<std::string>();
    r.params.max_new_tokens = rec["max_new_tokens"].get<int64_t>();
    return r;
}

std::vector<int64_t> expected_tokens(const json& rec, size_t run, size_t prompt) {
    return rec["runs"][run]["greedy"][prompt].get<std::vector<int64_t>>();
}

struct StatsLog {
    std::mutex mutex;
    std::vector<StepStats> steps;
    void operator()(const StepStats& s) {
        std::lock_guard<std::mutex> lock(mutex);
        steps.push_back(s);
    }
};

}  // namespace

class TestLoraEngine : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void mixed_batch_matches_hf_and_each_alone_data() {
        QTest::addColumn<QString>("base_name");
        for (const auto& b : test::lora_bases()) QTest::newRow(b.c_str()) << QString::fromStdString(b);
    }

    void mixed_batch_matches_hf_and_each_alone() {
        QFETCH(QString, base_name);
        const auto base = test::load_lora_base(base_name.toStdString());
        const json& rec = base.records;
        const size_t runs = rec["runs"].size(), prompts = rec["prompts"].size();
        auto engine = make_engine(base);
        auto log = std::make_shared<StatsLog>();
        engine->set_stats_listener([log](const StepStats& s) { (*log)(s); });

        // Everything submitted while paused joins the first step's batch together.
        auto sink = std::make_shared<CollectingSink>();
        std::vector<std::pair<RequestId, std::pair<size_t, size_t>>> ids;
        engine->set_paused(true);
        for (size_t p = 0; p < prompts; ++p)
            for (size_t r = 0; r < runs; ++r) ids.emplace_back(engine->submit(greedy_request(rec, r, p), sink), std::make_pair(r, p));
        engine->set_paused(false);
        QVERIFY(sink->wait_finished(ids.size()));
        for (const auto& [id, rp] : ids) {
            const auto got = sink->get(id);
            QCOMPARE(got.finishes.size(), size_t(1));
            QVERIFY2(got.finishes[0].reason != FinishReason::Error, got.finishes[0].error.c_str());
            if (got.finishes[0].token_ids != expected_tokens(rec, rp.first, rp.second))
                QFAIL(qPrintable(QString("run %1 prompt %2 differs from HF + PEFT in the mixed batch").arg(rp.first).arg(rp.second)));
        }
        {
            std::lock_guard<std::mutex> lock(log->mutex);
            QVERIFY(!log->steps.empty());
            const StepStats& first = log->steps.front();
            QCOMPARE(first.rows, int64_t(runs * prompts));
            QCOMPARE(first.rows_per_adapter.size(), runs);
            for (const auto& [name, n] : first.rows_per_adapter) QCOMPARE(n, int64_t(prompts));
            QVERIFY(first.adapter_bytes > 0);
            int64_t resident = 0;
            for (const auto& info : engine->adapters()) resident += info.bytes;
            QCOMPARE(first.adapter_bytes, resident);
        }

        // Each request alone gives the same tokens.
        for (size_t r = 0; r < runs; ++r) {
            for (size_t p = 0; p < prompts; ++p) {
                auto alone = std::make_shared<CollectingSink>();
                const RequestId id = engine->submit(greedy_request(rec, r, p), alone);
                QVERIFY(alone->wait_finished(1));
                QCOMPARE(alone->get(id).finishes[0].token_ids, expected_tokens(rec, r, p));
            }
        }
    }

    void unknown_and_broken_adapters_fail_only_their_requests() {
        const auto base = test::load_lora_base("t5");
        const auto bart = test::load_lora_base("bart");
        const json& rec = base.records;
        auto engine = make_engine(base);
        QVERIFY_EXCEPTION_THROWN(engine->load_adapter("dora", test::broken_adapter_dir("dora")), Error);
        QVERIFY_EXCEPTION_THROWN(engine->load_adapter("shapes", test::broken_adapter_dir("wrong_shapes")), Error);
        QVERIFY_EXCEPTION_THROWN(engine->load_adapter("bart", bart.adapter_dir("small")), Error);
        QCOMPARE(engine->adapters().size(), base.adapter_names().size());

        auto sink = std::make_shared<CollectingSink>();
        Request unknown = greedy_request(rec, 1, 0);
        unknown.adapter = "never-loaded";
        Request failed = greedy_request(rec, 1, 0);
        failed.adapter = "dora";
        const RequestId good = engine->submit(greedy_request(rec, 2, 1), sink);
        const RequestId bad1 = engine->submit(unknown, sink);
        const RequestId bad2 = engine->submit(failed, sink);
        QVERIFY(sink->wait_finished(3));
        QCOMPARE(sink->get(bad1).finishes[0].reason, FinishReason::Error);
        QVERIFY(sink->get(bad1).finishes[0].error.find("never-loaded") != std::string::npos);
        QCOMPARE(sink->get(bad2).finishes[0].reason, FinishReason::Error);
        QVERIFY(sink->get(bad2).finishes[0].error.find("DoRA") != std::string::npos);
        QCOMPARE(sink->get(good).finishes[0].token_ids, expected_tokens(rec, 2, 1));
    }

    void unload_waits_for_running_requests_and_fails_queued_ones() {
        const auto base = test::load_lora_base("bloom");
        const json& rec = base.records;
        EngineOptions options;
        options.model_dir = base.model_dir;
        options.threads = 1;
        options.max_batch_size = 1;   // the second request waits in the queue
        auto engine = Engine::create(options);
        engine->load_adapter("all", base.adapter_dir("all"));
        const size_t run = 3;   // "all" in the oracle's run order
        QCOMPARE(rec["runs"][run]["adapter"].get<std::string>(), std::string("all"));

        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        const RequestId running = engine->submit(greedy_request(rec, run, 0), sink);
        const RequestId queued = engine->submit(greedy_request(rec, run, 1), sink);
        engine->step_once();   // admits the first request only
        // Wait until that step ran: the running request has its first token and pins the adapter.
        for (int i = 0; i < 1000 && sink->get(running).tokens.empty(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        QVERIFY(!sink->get(running).tokens.empty());
        std::atomic<bool> unloaded{false};
        std::thread unloader([&] {
            engine->unload_adapter("all");
            unloaded = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        QVERIFY(!unloaded);   // the running request pins the adapter
        const RequestId late = engine->submit(greedy_request(rec, run, 2), sink);
        engine->set_paused(false);
        unloader.join();
        QVERIFY(sink->wait_finished(3));
        QCOMPARE(sink->get(running).finishes[0].token_ids, expected_tokens(rec, run, 0));
        QCOMPARE(sink->get(queued).finishes[0].reason, FinishReason::Error);
        QCOMPARE(sink->get(late).finishes[0].reason, FinishReason::Error);
        QVERIFY(engine->adapters().empty());
        QVERIFY_EXCEPTION_THROWN(engine->unload_adapter("all"), Error);

        // The base model still serves.
        const RequestId after = engine->submit(greedy_request(rec, 0, 0), sink);
        QVERIFY(sink->wait_finished(4));
        QCOMPARE(sink->get(after).finishes[0].token_ids, expected_tokens(rec, 0, 0));
    }
};

QTEST_APPLESS_MAIN(TestLoraEngine)
#include "test_lora_engine.moc"
