// The engine against Hugging Face's greedy outputs (recorded by tests/oracle/models_oracle.py):
// a request's tokens are identical alone, in one batch, and with neighbours joining and leaving
// at arbitrary steps; cancellation, invalid parameters and statistics behave as the contract says.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <random>

#include "../models/oracle_records.h"
#include <ATen/ATen.h>

#include "collecting_sink.h"
#include "engine_test_support.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "lorascope/params.h"
#include "model_variants.h"
#include "test_env.h"

using lorascope::Engine;
using lorascope::EngineOptions;
using lorascope::FinishReason;
using lorascope::Request;
using lorascope::RequestId;
using lorascope::test::CollectingSink;
using json = nlohmann::json;
using lorascope::test::greedy_request;
using lorascope::test::load_variant;
using lorascope::test::make_engine;
using lorascope::test::Variant;

class TestEngine : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void greedy_matches_hf_alone_batched_and_staggered_data() {
        QTest::addColumn<QString>("variant");
        for (const auto& v : lorascope::test::model_variants()) QTest::newRow(v.c_str()) << QString::fromStdString(v);
    }

    void greedy_matches_hf_alone_batched_and_staggered() {
        QFETCH(QString, variant);
        const Variant v = load_variant(variant.toStdString());
        const auto& prompts = v.records["prompts"];
        const auto& greedy = v.records["greedy"];
        const int64_t max_new = v.records["max_new_tokens"].get<int64_t>();
        const size_t n = prompts.size();

        // Alone.
        {
            auto engine = make_engine(v.dir);
            auto sink = std::make_shared<CollectingSink>();
            for (size_t i = 0; i < n; ++i) {
                const RequestId id = engine->submit(greedy_request(prompts[i], max_new), sink);
                QVERIFY(sink->wait_finished(i + 1));
                const auto rec = sink->get(id);
                QCOMPARE(rec.finishes.size(), size_t(1));
                QCOMPARE(rec.finishes[0].token_ids, greedy[i].get<std::vector<int64_t>>());
                QCOMPARE(rec.tokens.size(), rec.finishes[0].token_ids.size());
                const auto want = v.records["finish_reason"][i].get<std::string>();
                QCOMPARE(std::string(lorascope::to_string(rec.finishes[0].reason)), want);
            }
        }
        // All at once, one batch.
        {
            auto engine = make_engine(v.dir);
            auto sink = std::make_shared<CollectingSink>();
            std::vector<RequestId> ids;
            for (size_t i = 0; i < n; ++i) ids.push_back(engine->submit(greedy_request(prompts[i], max_new), sink));
            QVERIFY(sink->wait_finished(n));
            for (size_t i = 0; i < n; ++i)
                QCOMPARE(sink->get(ids[i]).finishes.at(0).token_ids, greedy[i].get<std::vector<int64_t>>());
        }
        // Staggered: the engine is held between steps while neighbours join at chosen steps, with
        // a row limit that makes some wait in the queue. Shorter max_new_tokens for some requests
        // make rows leave in the middle.
        {
            auto engine = make_engine(v.dir, 3);
            auto sink = std::make_shared<CollectingSink>();
            // Checked on the engine thread; QTest macros are for the test thread only.
            std::atomic<bool> stats_ok{true};
            std::atomic<int> steps{0};
            engine->set_stats_listener([&](const lorascope::StepStats& s) {
                if (s.rows > 3 || static_cast<int64_t>(s.row_requests.size()) != s.rows) stats_ok = false;
                ++steps;
            });
            engine->set_paused(true);
            std::mt19937 rng(7);
            std::vector<std::pair<RequestId, size_t>> submitted;
            std::vector<int64_t> limits;
            for (size_t round = 0; round < 2; ++round) {
                for (size_t i = 0; i < n; ++i) {
                    const int64_t limit = round == 0 ? max_new : 1 + static_cast<int64_t>(rng() % max_new);
                    submitted.push_back({engine->submit(greedy_request(prompts[i], limit), sink), i});
                    limits.push_back(limit);
                    const int steps = static_cast<int>(rng() % 4);
                    for (int s = 0; s < steps; ++s) engine->step_once();
                }
            }
            engine->set_paused(false);
            QVERIFY(sink->wait_finished(submitted.size()));
            engine->wait_idle();
            engine->set_stats_listener(nullptr);
            QVERIFY(stats_ok);
            QVERIFY(steps > 0);
            for (size_t k = 0; k < submitted.size(); ++k) {
                auto want = greedy[submitted[k].second].get<std::vector<int64_t>>();
                if (static_cast<int64_t>(want.size()) > limits[k]) {
                    want.resize(static_cast<size_t>(limits[k]));
                    // A forced eos (BART's, Marian's, mBART's, Pegasus's generation config; not
                    // M2M100's) takes the last position the limit allows.
                    const auto& forced_eos = v.records["forced_eos_token_id"];
                    if (!forced_eos.is_null()) want.back() = forced_eos.get<int64_t>();
                }
                QCOMPARE(sink->get(submitted[k].first).finishes.at(0).token_ids, want);
            }
        }
    }

    void beam_search_matches_hf_data() {
        QTest::addColumn<QString>("variant");
        for (const auto& v : lorascope::test::model_variants()) QTest::newRow(v.c_str()) << QString::fromStdString(v);
    }

    // Beams live as rows of the shared batch: every beam request, run alone and all together with
    // greedy neighbours, returns Hugging Face's best hypothesis.
    void beam_search_matches_hf() {
        QFETCH(QString, variant);
        const Variant v = load_variant(variant.toStdString());
        std::ifstream in(lorascope::test::oracle_dir() + "/models/" + variant.toStdString() + "/beams.json");
        QVERIFY2(in.good(), "missing beams.json (run the oracle_beams step)");
        json beams;
        in >> beams;
        const auto& prompts = v.records["prompts"];
        for (bool together : {false, true}) {
            auto engine = make_engine(v.dir, 64);
            auto sink = std::make_shared<CollectingSink>();
            std::vector<std::pair<RequestId, std::vector<int64_t>>> expected;
            size_t total = 0;
            for (const auto& setting : beams["settings"]) {
                for (size_t i = 0; i < prompts.size(); ++i) {
                    Request r;
                    r.input_ids = prompts[i].get<std::vector<int64_t>>();
                    r.params = lorascope::parse_generation_params(setting["params"].dump(), "beams.json");
                    expected.push_back({engine->submit(r, sink), setting["outputs"][i].get<std::vector<int64_t>>()});
                    ++total;
                    if (together) {
                        engine->submit(greedy_request(prompts[i], 9), sink);  // a greedy neighbour
                        ++total;
                    } else {
                        QVERIFY(sink->wait_finished(total));
                    }
                }
            }
            QVERIFY(sink->wait_finished(total));
            for (const auto& [id, want] : expected) {
                const auto rec = sink->get(id);
                QCOMPARE(rec.finishes.size(), size_t(1));
                QCOMPARE(rec.finishes[0].token_ids, want);
                QCOMPARE(rec.tokens.size(), want.size());
            }
        }
    }

    void cancel_before_and_during_decoding() {
        const Variant v = load_variant("t5_v1_1");
        const auto& prompts = v.records["prompts"];
        auto engine = make_engine(v.dir, 2);
        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        std::vector<RequestId> ids;
        for (size_t i = 0; i < 4; ++i) ids.push_back(engine->submit(greedy_request(prompts[i], 32), sink));
        engine->step_once();
        engine->step_once();
        // ids[3] has not been admitted (two rows max); ids[0] is running.
        engine->cancel(ids[3]);
        engine->cancel(ids[0]);
        QVERIFY(sink->wait_finished(2, std::chrono::seconds(30)));
        engine->set_paused(false);
        QVERIFY(sink->wait_finished(4));
        engine->wait_idle();
        QCOMPARE(sink->get(ids[3]).finishes.at(0).reason, FinishReason::Cancelled);
        QCOMPARE(sink->get(ids[3]).tokens.size(), size_t(0));
        QCOMPARE(sink->get(ids[0]).finishes.at(0).reason, FinishReason::Cancelled);
        for (RequestId id : ids) QCOMPARE(sink->get(id).finishes.size(), size_t(1));
        const auto& greedy = v.records["greedy"];
        QCOMPARE(sink->get(ids[1]).finishes.at(0).token_ids, greedy[1].get<std::vector<int64_t>>());
        QCOMPARE(sink->get(ids[2]).finishes.at(0).token_ids, greedy[2].get<std::vector<int64_t>>());
    }

    void cancel_while_paused_before_any_step() {
        const Variant v = load_variant("t5_v1_0");
        auto engine = make_engine(v.dir);
        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        const RequestId doomed = engine->submit(greedy_request(v.records["prompts"][0], 32), sink);
        const RequestId kept = engine->submit(greedy_request(v.records["prompts"][1], 32), sink);
        engine->cancel(doomed);
        QVERIFY(sink->wait_until(doomed, std::chrono::seconds(30)));
        QCOMPARE(sink->get(doomed).finishes.at(0).reason, FinishReason::Cancelled);
        QCOMPARE(sink->get(doomed).tokens.size(), size_t(0));
        engine->set_paused(false);
        QVERIFY(sink->wait_until(kept));
        QCOMPARE(sink->get(kept).finishes.at(0).token_ids, v.records["greedy"][1].get<std::vector<int64_t>>());
        QCOMPARE(sink->get(doomed).finishes.size(), size_t(1));
    }

    void invalid_requests_fail_alone() {
        const Variant v = load_variant("bloom_4h");
        const auto& prompts = v.records["prompts"];
        auto engine = make_engine(v.dir);
        auto sink = std::make_shared<CollectingSink>();
        Request bad_top_p = greedy_request(prompts[0], 8);
        bad_top_p.params.top_p = 1.5;
        Request bad_id = greedy_request(prompts[0], 8);
        bad_id.input_ids.push_back(1 << 30);
        Request empty;
        empty.params.max_new_tokens = 4;
        Request text_without_tokenizer;
        text_without_tokenizer.prompt = "hello";
        const RequestId good = engine->submit(greedy_request(prompts[1], 32), sink);
        const RequestId a = engine->submit(bad_top_p, sink);
        const RequestId b = engine->submit(bad_id, sink);
        const RequestId c = engine->submit(empty, sink);
        const RequestId d = engine->submit(text_without_tokenizer, sink);
        QVERIFY(sink->wait_finished(5));
        for (RequestId id : {a, b, c, d}) {
            const auto f = sink->get(id).finishes.at(0);
            QCOMPARE(f.reason, FinishReason::Error);
            QVERIFY2(!f.error.empty(), "an error finish carries a message");
        }
        QVERIFY(QString::fromStdString(sink->get(a).finishes[0].error).contains("top_p"));
        QVERIFY(QString::fromStdString(sink->get(b).finishes[0].error).contains("vocabulary"));
        QCOMPARE(sink->get(good).finishes.at(0).token_ids, v.records["greedy"][1].get<std::vector<int64_t>>());
    }

    void seeded_sampling_ignores_neighbours() {
        const Variant v = load_variant("t5_v1_0");
        const auto& prompts = v.records["prompts"];
        auto sampled = [&](bool with_neighbours) {
            auto engine = make_engine(v.dir);
            auto sink = std::make_shared<CollectingSink>();
            Request r = greedy_request(prompts[2], 16);
            r.params.do_sample = true;
            r.params.seed = 1234;
            r.params.top_k = 20;
            r.params.temperature = 1.3;
            size_t total = 1;
            if (with_neighbours) {
                for (size_t i = 0; i < 3; ++i) {
                    Request n = greedy_request(prompts[i], 10);
                    n.params.do_sample = true;
                    n.params.seed = 99 + i;
                    engine->submit(n, sink);
                    ++total;
                }
            }
            const RequestId id = engine->submit(r, sink);
            sink->wait_finished(total);
            return sink->get(id).finishes.at(0).token_ids;
        };
        const auto alone = sampled(false);
        QVERIFY(!alone.empty());
        QCOMPARE(sampled(true), alone);
    }

    // --dtype is read before the weights: an unknown name lists the known ones; float16 on the CPU
    // is refused with the reason.
    void unknown_dtype_is_a_clear_error() {
        const Variant v = load_variant(lorascope::test::model_variants().front());
        EngineOptions options;
        options.model_dir = v.dir;
        options.dtype = "int3";
        try {
            Engine::create(options);
            QFAIL("expected an error");
        } catch (const lorascope::Error& e) {
            QCOMPARE(e.kind(), lorascope::ErrorKind::InvalidArgument);
            const QString what = e.what();
            QVERIFY2(what.contains("int3") && what.contains("int8") && what.contains("int4"), e.what());
        }
        // float16 on the CPU: refused at load, not a per-request "not implemented for 'Half'" at
        // the first prefill (Debian's LibTorch has no float16 addmm or layer norm on the CPU).
        options.dtype = "float16";
        try {
            Engine::create(options);
            QFAIL("expected float16 on the CPU to be refused at load");
        } catch (const lorascope::Error& e) {
            QCOMPARE(e.kind(), lorascope::ErrorKind::Unsupported);
            const QString what = e.what();
            QVERIFY2(what.contains("float16") && what.contains("CPU") && what.contains("bfloat16"), e.what());
        }
    }

    // --kv-cache-dtype: bfloat16 halves each block; "auto" under float32 products keeps float32
    // (HF's numbers); names this build cannot store are refused before the weights are read.
    void kv_cache_dtype_sets_what_the_cache_stores() {
        const Variant v = load_variant("bloom_4h");
        const auto& prompts = v.records["prompts"];
        auto block_bytes = [&](const std::string& kv) {
            EngineOptions options;
            options.model_dir = v.dir;
            options.threads = 2;
            options.kv_cache_dtype = kv;
            auto engine = Engine::create(options);
            auto sink = std::make_shared<CollectingSink>();
            std::atomic<int64_t> per_block{0};
            engine->set_stats_listener([&](const lorascope::StepStats& s) {
                if (s.kv_blocks_used > 0) per_block = s.kv_bytes_allocated / s.kv_blocks_used;
            });
            const RequestId id = engine->submit(greedy_request(prompts[0], 4), sink);
            if (!sink->wait_finished(1)) return int64_t(-1);
            engine->wait_idle();
            engine->set_stats_listener(nullptr);
            if (sink->get(id).finishes.at(0).token_ids.size() != 4) return int64_t(-2);
            return per_block.load();
        };
        const int64_t f32 = block_bytes("float32");
        QVERIFY(f32 > 0);
        QCOMPARE(block_bytes("auto"), f32);
        QCOMPARE(block_bytes("bfloat16") * 2, f32);
        for (const auto& [name, kind] : {std::pair<std::string, lorascope::ErrorKind>{"int4", lorascope::ErrorKind::InvalidArgument},
                                         {"float16", lorascope::ErrorKind::Unsupported}}) {
            EngineOptions options;
            options.model_dir = v.dir;
            options.kv_cache_dtype = name;
            try {
                Engine::create(options);
                QFAIL("expected an error");
            } catch (const lorascope::Error& e) {
                QCOMPARE(e.kind(), kind);
                QVERIFY2(QString(e.what()).contains(QString::fromStdString(name)) && QString(e.what()).contains("bfloat16"), e.what());
            }
        }
    }

    // The Llama family through the engine's own prefill (prompts in chunks of 16, the last prompt
    // token fed by the first decoding step): each greedy token's log-probability within 1e-5 of
    // HF's, whose records hold the raw logits of the first steps computed incrementally as
    // generate() does. Dynamic NTK rotary scaling sees the whole prompt's length in every chunk,
    // as HF's one pass over the prompt does (llama_dynamic's 23- and 60-token prompts exceed its
    // 32 positions).
    void llama_logprobs_match_hf_through_chunked_prefill_data() {
        QTest::addColumn<QString>("variant");
        for (const auto& v : lorascope::test::model_variants())
            if (lorascope::test::is_llama_variant(v)) QTest::newRow(v.c_str()) << QString::fromStdString(v);
    }

    void llama_logprobs_match_hf_through_chunked_prefill() {
        QFETCH(QString, variant);
        const Variant v = load_variant(variant.toStdString());
        auto options = lorascope::test::engine_options(v.dir);
        options.prefill_chunk_tokens = 16;
        auto engine = Engine::create(options);
        auto sink = std::make_shared<CollectingSink>();
        const auto& prompts = v.records["prompts"];
        std::vector<RequestId> ids;
        for (const auto& prompt : prompts) {
            Request r = greedy_request(prompt, v.records["max_new_tokens"].get<int64_t>());
            r.params.logprobs = true;
            ids.push_back(engine->submit(r, sink));
        }
        QVERIFY(sink->wait_finished(prompts.size()));
        double worst = 0;
        for (size_t p = 0; p < prompts.size(); ++p) {
            const auto record = sink->get(ids[p]);
            const auto& finish = record.finishes.at(0);
            const auto greedy = v.records["greedy"][p].get<std::vector<int64_t>>();
            QCOMPARE(finish.token_ids, greedy);
            const auto& steps = v.records["step_logits"][p];
            QCOMPARE(finish.logprobs.size(), greedy.size());
            for (size_t s = 0; s < steps.size(); ++s) {
                const at::Tensor hf = at::log_softmax(at::tensor(steps[s].get<std::vector<float>>()), -1);
                const double diff = std::abs(finish.logprobs[s] - hf[static_cast<int64_t>(greedy[s])].item<double>());
                worst = std::max(worst, diff);
                QVERIFY2(diff <= 1e-5, qPrintable(QString("prompt %1 step %2: |logprob - HF| = %3").arg(p).arg(s).arg(diff)));
            }
        }
        qInfo("%s: largest |logprob - HF| of a greedy token %.3g", qPrintable(variant), worst);
    }

    // Grouped-query attention: the cache holds the key/value heads only (llama_gqa: 6 query heads
    // over 2 key/value heads of 8 dimensions, 2 layers): K and V x layers x 16 positions x 2 x 8 floats.
    void kv_cache_holds_key_value_heads_only() {
        const Variant v = load_variant("llama_gqa");
        auto engine = make_engine(v.dir);
        auto sink = std::make_shared<CollectingSink>();
        std::atomic<int64_t> per_block{0};
        engine->set_stats_listener([&](const lorascope::StepStats& s) {
            if (s.kv_blocks_used > 0) per_block = s.kv_bytes_allocated / s.kv_blocks_used;
        });
        engine->submit(greedy_request(v.records["prompts"][1], 4), sink);
        QVERIFY(sink->wait_finished(1));
        engine->wait_idle();
        engine->set_stats_listener(nullptr);
        QCOMPARE(per_block.load(), int64_t(2 * 2 * 16 * 2 * 8 * 4));
    }

    void bad_model_directory_is_a_clear_error() {
        EngineOptions options;
        options.model_dir = "/nonexistent/lorascope-model";
        try {
            Engine::create(options);
            QFAIL("expected an error");
        } catch (const lorascope::Error& e) {
            QVERIFY(QString(e.what()).contains("/nonexistent/lorascope-model"));
        }
    }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "test_engine.moc"
