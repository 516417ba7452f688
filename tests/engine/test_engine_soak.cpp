// Soak: 300 requests with random prompts, random (sometimes invalid) parameters, random arrival
// and ~30% random cancellations. Every request gets exactly one finish event and nothing after it;
// requests that were not cancelled produce exactly what they produce alone (greedy, seeded
// sampling and beams), cancelled ones a prefix of it.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <thread>

#include "collecting_sink.h"
#include "lorascope/engine.h"
#include "test_env.h"

using namespace lorascope;
using lorascope::test::CollectingSink;

namespace {

struct Planned {
    Request request;
    bool valid = true;
    bool cancel = false;
    int cancel_after_us = 0;
};

std::vector<Planned> plan(int64_t vocab, int count, uint32_t seed) {
    std::mt19937 rng(seed);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::vector<Planned> out;
    for (int i = 0; i < count; ++i) {
        Planned p;
        p.request.client_id = "soak-" + std::to_string(i);
        p.request.input_ids.resize(static_cast<size_t>(uniform(1, 40)));
        for (auto& t : p.request.input_ids) t = uniform(3, static_cast<int>(vocab) - 1);
        p.request.params.max_new_tokens = uniform(1, 16);
        const int kind = uniform(0, 99);
        if (kind < 50) {
            // greedy, sometimes with processors
            if (uniform(0, 1)) p.request.params.repetition_penalty = 1.2;
            if (uniform(0, 3) == 0) p.request.params.no_repeat_ngram_size = 2;
        } else if (kind < 78) {
            p.request.params.do_sample = true;
            p.request.params.seed = static_cast<uint64_t>(uniform(0, 1 << 20));
            p.request.params.top_k = uniform(0, 40);
            p.request.params.top_p = 0.5 + 0.5 * uniform(1, 10) / 10.0;
            p.request.params.temperature = 0.5 + uniform(0, 10) / 10.0;
        } else if (kind < 88) {
            p.request.params.num_beams = uniform(2, 3);
        } else {
            p.valid = false;
            switch (uniform(0, 3)) {
                case 0: p.request.params.top_p = 1.5; break;
                case 1: p.request.params.num_beams = 0; break;
                case 2: p.request.params.max_new_tokens = -3; break;
                default: p.request.input_ids.push_back(vocab + 7); break;
            }
        }
        p.cancel = uniform(0, 99) < 30;
        p.cancel_after_us = uniform(0, 20000);
        out.push_back(std::move(p));
    }
    return out;
}

std::unique_ptr<Engine> engine_for(const std::string& dir, int64_t rows) {
    EngineOptions o;
    o.model_dir = dir;
    o.threads = 1;
    o.max_batch_size = rows;
    o.max_batch_tokens = 4096;
    return Engine::create(o);
}

}  // namespace

class TestEngineSoak : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void soak_data() {
        QTest::addColumn<QString>("variant");
        QTest::newRow("t5_v1_1") << "t5_v1_1";
        QTest::newRow("bloom_6h_postln") << "bloom_6h_postln";
    }

    void soak() {
        QFETCH(QString, variant);
        const std::string dir = lorascope::test::oracle_dir() + "/models/" + variant.toStdString() + "/model";
        QVERIFY2(lorascope::test::exists(dir + "/config.json"), "missing oracle model (run oracle_models)");
        auto engine = engine_for(dir, 12);
        const auto requests = plan(engine->model_config().vocab_size(), 300, 2026);

        // Alone: one request at a time through its own engine.
        auto alone_engine = engine_for(dir, 4);
        auto alone_sink = std::make_shared<CollectingSink>();
        std::vector<std::vector<int64_t>> alone(requests.size());
        for (size_t i = 0; i < requests.size(); ++i) {
            if (!requests[i].valid) continue;
            const RequestId id = alone_engine->submit(requests[i].request, alone_sink);
            alone_sink->wait_until(id);
            alone[i] = alone_sink->get(id).finishes.at(0).token_ids;
        }

        // Together, with random arrival and cancellations from another thread.
        auto sink = std::make_shared<CollectingSink>();
        std::vector<RequestId> ids(requests.size());
        std::mt19937 rng(99);
        std::vector<std::thread> cancellers;
        for (size_t i = 0; i < requests.size(); ++i) {
            ids[i] = engine->submit(requests[i].request, sink);
            if (requests[i].cancel) {
                const RequestId id = ids[i];
                const int wait = requests[i].cancel_after_us;
                Engine* e = engine.get();
                cancellers.emplace_back([e, id, wait] {
                    std::this_thread::sleep_for(std::chrono::microseconds(wait));
                    e->cancel(id);
                });
            }
            std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 2000)(rng)));
        }
        for (auto& t : cancellers) t.join();
        QVERIFY(sink->wait_finished(requests.size(), std::chrono::seconds(600)));
        engine->wait_idle();
        QCOMPARE(sink->finished(), requests.size());

        int cancelled = 0, errors = 0, compared = 0;
        for (size_t i = 0; i < requests.size(); ++i) {
            const auto rec = sink->get(ids[i]);
            QCOMPARE(rec.finishes.size(), size_t(1));
            QVERIFY2(!rec.token_after_finish, "a token event arrived after the finish event");
            const auto& f = rec.finishes[0];
            if (!requests[i].valid) {
                QCOMPARE(f.reason, FinishReason::Error);
                QVERIFY(!f.error.empty());
                ++errors;
                continue;
            }
            QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
            const auto& want = alone[i];
            if (f.reason == FinishReason::Cancelled) {
                ++cancelled;
                QVERIFY(f.token_ids.size() <= want.size());
                // Beams stream nothing before the search ends; others stream a prefix.
                QVERIFY(std::equal(f.token_ids.begin(), f.token_ids.end(), want.begin()));
            } else {
                QCOMPARE(f.token_ids, want);
                ++compared;
            }
        }
        qInfo("%d compared with their single runs, %d cancelled, %d rejected", compared, cancelled, errors);
        QVERIFY(compared > 100);
        QVERIFY(errors > 10);
    }
};

QTEST_GUILESS_MAIN(TestEngineSoak)
#include "test_engine_soak.moc"
