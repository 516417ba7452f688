// The batching core's contract beyond numerics: the KV cache moves no bytes on joins and leaves,
// queues what does not fit, the per-step prefill budget keeps every request's tokens unchanged,
// cancel_all leaves later submissions alone, client ids are echoed, replacing the stats listener
// waits for a call in flight, a latency target sizes even the first wave by measured steps, and a
// packed queue (QueueOrder::Pack) joins by length, a decoder-only model's prompts weighed, with every
// token HF's.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "collecting_sink.h"
#include "engine_test_support.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"

using namespace lorascope;
using test::CollectingSink;

namespace {

struct StatsLog {
    std::mutex mutex;
    std::vector<StepStats> steps;
    void attach(Engine& engine) {
        engine.set_stats_listener([this](const StepStats& s) {
            std::lock_guard<std::mutex> lock(mutex);
            steps.push_back(s);
        });
    }
    // The requests in the order each first holds a row.
    std::vector<RequestId> join_order() {
        std::lock_guard<std::mutex> lock(mutex);
        std::vector<RequestId> joined;
        for (const auto& s : steps)
            for (RequestId id : s.row_requests)
                if (std::find(joined.begin(), joined.end(), id) == joined.end()) joined.push_back(id);
        return joined;
    }
};

// `id` finished without an error, with HF's greedy tokens `greedy` cut at `max_new` (not for BART:
// its generation config forces EOS at the last position, so a shorter max_new_tokens is no prefix
// of HF's records).
void check_greedy_prefix(CollectingSink& sink, RequestId id, const nlohmann::json& greedy, int64_t max_new) {
    const auto rec = sink.get(id);
    QCOMPARE(rec.finishes.size(), size_t(1));
    QCOMPARE(rec.finishes[0].reason == FinishReason::Error ? rec.finishes[0].error : std::string(), std::string());
    auto expected = greedy.get<std::vector<int64_t>>();
    expected.resize(std::min(expected.size(), size_t(max_new)));
    QCOMPARE(rec.finishes[0].token_ids, expected);
}

// Submits every prompt of `v` (engine paused, so that they share steps) and checks each against
// HF's greedy tokens.
void run_all_and_compare(Engine& engine, const test::Variant& v, size_t copies = 1) {
    const auto& prompts = v.records["prompts"];
    const auto& greedy = v.records["greedy"];
    const int64_t max_new = v.records["max_new_tokens"].get<int64_t>();
    auto sink = std::make_shared<CollectingSink>();
    engine.set_paused(true);
    std::vector<std::pair<RequestId, size_t>> ids;
    for (size_t c = 0; c < copies; ++c)
        for (size_t i = 0; i < prompts.size(); ++i)
            ids.push_back({engine.submit(test::greedy_request(prompts[i], max_new), sink), i});
    engine.set_paused(false);
    QVERIFY(sink->wait_finished(ids.size()));
    engine.wait_idle();
    for (const auto& [id, i] : ids) {
        const auto rec = sink->get(id);
        QCOMPARE(rec.finishes.size(), size_t(1));
        QCOMPARE(rec.finishes[0].reason == FinishReason::Error ? rec.finishes[0].error : std::string(), std::string());
        QCOMPARE(rec.finishes[0].token_ids, greedy[i].get<std::vector<int64_t>>());
    }
}

// Submits a greedy request per prompt index of `prompt_of` and max_new_tokens of `lengths` (engine
// paused: one intake), runs them to the end, checks each against HF's greedy tokens cut at its length
// and returns their ids (in submission order) and the order in which each first held a row.
struct JoinRun {
    std::vector<RequestId> ids, joined;
};
JoinRun run_join_order(const EngineOptions& options, const test::Variant& v, const std::vector<size_t>& prompt_of,
                       const std::vector<int64_t>& lengths) {
    const auto& prompts = v.records["prompts"];
    const auto& greedy = v.records["greedy"];
    auto engine = Engine::create(options);
    StatsLog log;
    log.attach(*engine);
    auto sink = std::make_shared<CollectingSink>();
    engine->set_paused(true);
    JoinRun run;
    for (size_t i = 0; i < lengths.size(); ++i)
        run.ids.push_back(engine->submit(test::greedy_request(prompts[prompt_of[i]], lengths[i]), sink));
    engine->set_paused(false);
    [&] { QVERIFY(sink->wait_finished(run.ids.size())); }();
    engine->wait_idle();
    engine->set_stats_listener(nullptr);
    for (size_t i = 0; i < run.ids.size(); ++i) check_greedy_prefix(*sink, run.ids[i], greedy[prompt_of[i]], lengths[i]);
    run.joined = log.join_order();
    return run;
}

// Submits `count` requests of `tokens` tokens each (EOS ignored), cycling through `prompts`:
// rows that keep decoding while the request under test is prefilled under the budget.
std::vector<RequestId> submit_leads(Engine& engine, const std::shared_ptr<CollectingSink>& sink,
                                    const nlohmann::json& prompts, size_t count, int64_t tokens) {
    std::vector<RequestId> leads;
    for (size_t c = 0; c < count; ++c) {
        Request lead = test::greedy_request(prompts[c % prompts.size()], tokens);
        lead.params.ignore_eos = true;
        leads.push_back(engine.submit(lead, sink));
    }
    return leads;
}

}  // namespace

class TestEngineBatching : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void variants_data() {
        QTest::addColumn<QString>("variant");
        for (const char* v : {"t5_v1_1", "bart_plain", "bloom_4h"}) QTest::newRow(v) << QString(v);
    }

    // Greedy requests joining and leaving at every step: the cache copies nothing for either.
    void joins_and_leaves_move_no_bytes_data() { variants_data(); }
    void joins_and_leaves_move_no_bytes() {
        QFETCH(QString, variant);
        const auto v = test::load_variant(variant.toStdString());
        auto engine = test::make_engine(v.dir, 3);  // a row limit: some wait, join later
        StatsLog log;
        log.attach(*engine);
        run_all_and_compare(*engine, v);
        engine->set_stats_listener(nullptr);
        int64_t joined = 0, prefilled = 0;
        for (const auto& s : log.steps) {
            QCOMPARE(s.cache_bytes_moved, int64_t(0));
            QVERIFY(s.kv_blocks_used <= s.kv_blocks_total);
            QCOMPARE(static_cast<int64_t>(s.row_kv_blocks.size()), s.rows);
            for (bool p : s.row_prefill) joined += p;
            prefilled += s.cache_bytes_prefilled;
        }
        QVERIFY(joined >= static_cast<int64_t>(v.records["prompts"].size()));
        QVERIFY(prefilled > 0);
        QCOMPARE(log.steps.back().kv_blocks_used, int64_t(0));
    }

    // Under a target the engine times decoding steps before it takes requests, so that the first
    // wave is sized by a measure: against a target no step can meet, every step holds one row, the
    // first included (unmeasured, the first wave was the batch size), and every request still
    // gets HF's tokens.
    void a_target_sizes_the_first_wave_by_measured_steps_data() { variants_data(); }
    void a_target_sizes_the_first_wave_by_measured_steps() {
        QFETCH(QString, variant);
        const auto v = test::load_variant(variant.toStdString());
        QVERIFY(v.records["prompts"].size() >= 2);
        auto options = test::engine_options(v.dir);
        options.tpot_target_ms = 1e-6;
        auto engine = Engine::create(options);
        StatsLog log;
        log.attach(*engine);
        run_all_and_compare(*engine, v);
        engine->set_stats_listener(nullptr);
        QVERIFY(!log.steps.empty());
        for (const auto& s : log.steps) QCOMPARE(s.rows, int64_t(1));
    }

    // QueueOrder::Pack on a real engine: six requests of one prompt submitted together (one intake)
    // of 7, 2, 6, 3, 5 and 4 new tokens, three rows. Six wait, more than the rows: the three shortest join
    // first; then three wait (the batch's end) and join longest first (shortest first under a
    // latency target). Each request's tokens are HF's greedy ones, cut at its max_new_tokens (not
    // BART's: its generation config forces EOS at the last position, so a shorter max_new_tokens is
    // no prefix of HF's records).
    void a_packed_queue_joins_by_length_data() {
        QTest::addColumn<QString>("variant");
        QTest::addColumn<bool>("target");
        for (const char* v : {"t5_v1_1", "bloom_4h"}) {
            QTest::newRow(v) << QString(v) << false;
            QTest::newRow((std::string(v) + ", under a target").c_str()) << QString(v) << true;
        }
    }
    void a_packed_queue_joins_by_length() {
        QFETCH(QString, variant);
        QFETCH(bool, target);
        const auto v = test::load_variant(variant.toStdString());
        auto options = test::engine_options(v.dir, 3);
        options.queue_order = QueueOrder::Pack;
        // A target no step approaches: it changes the order's end, not what fits.
        if (target) options.tpot_target_ms = 60000;
        // One prompt: what a prompt token weighs (measured as the engine runs) cannot move the order.
        const auto run = run_join_order(options, v, std::vector<size_t>(6, 1), {7, 2, 6, 3, 5, 4});
        const auto& ids = run.ids;
        const auto& joined = run.joined;
        // 2, 3, 4 new tokens first; then the end longest first (7, 6, 5), or under a target shortest
        // first (5, 6, 7: the batch's last steps do not hold every row at its longest context).
        if (target)
            QCOMPARE(joined, (std::vector<RequestId>{ids[1], ids[3], ids[5], ids[4], ids[2], ids[0]}));
        else
            QCOMPARE(joined, (std::vector<RequestId>{ids[1], ids[3], ids[5], ids[0], ids[2], ids[4]}));
    }

    // A packed queue weighs a decoder-only model's prompts beside their new tokens: four requests
    // submitted together, two rows; 2 new tokens after the 60-token prompt, 4 after a 1-token one, 5
    // after 3, 6 after 7. Before any step has measured what a prompt token costs, it weighs half a
    // token to decode (kPromptWeightPrior): 32, 4.5, 6.5 and 9.5, so BLOOM's first wave is the 4 and
    // the 5; the end, longest first by new tokens, 6 then 2. An encoder-decoder's prompts weigh
    // nothing (BatchRunner::prompt_weight): T5's first wave is the 2 and the 4, its end 6 then 5.
    // HF's tokens for each.
    void a_packed_queue_weighs_prompts_data() {
        QTest::addColumn<QString>("variant");
        for (const char* v : {"t5_v1_1", "bloom_4h"}) QTest::newRow(v) << QString(v);
    }
    void a_packed_queue_weighs_prompts() {
        QFETCH(QString, variant);
        const auto v = test::load_variant(variant.toStdString());
        const std::vector<size_t> prompt_of{3, 0, 4, 1};
        const size_t prompt_tokens[] = {60, 1, 3, 7};
        for (size_t i = 0; i < 4; ++i) QCOMPARE(v.records["prompts"][prompt_of[i]].size(), prompt_tokens[i]);
        auto options = test::engine_options(v.dir, 2);
        options.queue_order = QueueOrder::Pack;
        const auto run = run_join_order(options, v, prompt_of, {2, 4, 5, 6});
        const auto& ids = run.ids;
        if (variant == "bloom_4h")
            QCOMPARE(run.joined, (std::vector<RequestId>{ids[1], ids[2], ids[3], ids[0]}));
        else
            QCOMPARE(run.joined, (std::vector<RequestId>{ids[0], ids[1], ids[3], ids[2]}));
    }

    // A prefill budget far below the prompts' lengths, with a row already decoding (the budget
    // protects decoding rows; an idle engine prefills at once): prompts are prefilled over several
    // steps (chunks for BLOOM, a few encoder layers per step for seq2seq) while the first request
    // decodes; every request's tokens stay HF's.
    void prefill_budget_keeps_tokens_data() { variants_data(); }
    void prefill_budget_keeps_tokens() {
        QFETCH(QString, variant);
        const auto v = test::load_variant(variant.toStdString());
        const auto& prompts = v.records["prompts"];
        const auto& greedy = v.records["greedy"];
        const int64_t max_new = v.records["max_new_tokens"].get<int64_t>();
        auto options = test::engine_options(v.dir);
        options.prefill_budget_tokens = 3;
        options.prefill_chunk_tokens = 3;   // BLOOM prompts in several chunks
        auto engine = Engine::create(options);
        StatsLog log;
        log.attach(*engine);
        auto sink = std::make_shared<CollectingSink>();
        // Held between steps: more rows are decoding (long leads, two per prompt) than arrive, so
        // the budget applies (it does not while as many rows wait as decode).
        engine->set_paused(true);
        const std::vector<RequestId> leads = submit_leads(*engine, sink, prompts, 2 * prompts.size(), 40);
        engine->step_once();
        QTRY_VERIFY_WITH_TIMEOUT(!sink->get(leads.back()).tokens.empty(), 60000);
        std::vector<RequestId> ids;
        for (size_t i = 0; i < prompts.size(); ++i) ids.push_back(engine->submit(test::greedy_request(prompts[i], max_new), sink));
        engine->set_paused(false);
        QVERIFY(sink->wait_finished(ids.size() + leads.size()));
        engine->wait_idle();
        engine->set_stats_listener(nullptr);
        for (RequestId lead : leads) QCOMPARE(sink->get(lead).finishes.at(0).token_ids.size(), size_t(40));
        for (size_t i = 0; i < ids.size(); ++i) QCOMPARE(sink->get(ids[i]).finishes.at(0).token_ids, greedy[i].get<std::vector<int64_t>>());
        int64_t deferred = 0, prefill_steps = 0;
        for (const auto& s : log.steps) {
            deferred = std::max(deferred, s.prefill_tokens_deferred);
            prefill_steps += s.prefill_tokens > 0;
        }
        QVERIFY2(deferred > 0, "no prefill work was ever deferred");
        QVERIFY(prefill_steps > 2);
    }

    // Encoder layers are whole: a budget paying for 1.5 layers of a prompt per step used to run one
    // layer per step and drop the rest. The unspent part now carries to the next step, so t5_v1_1's
    // three encoder units (two layers and the cross-attention memory) take two steps, not three.
    void encoder_budget_left_over_carries_to_the_next_step() {
        const auto v = test::load_variant("t5_v1_1");
        const auto& prompts = v.records["prompts"];
        size_t longest = 0;
        for (size_t i = 0; i < prompts.size(); ++i)
            if (prompts[i].size() > prompts[longest].size()) longest = i;
        const int64_t P = static_cast<int64_t>(prompts[longest].size());
        QVERIFY2(P >= 4, "the test needs a prompt of at least 4 tokens");
        auto options = test::engine_options(v.dir);
        options.prefill_budget_tokens = (P + 1) / 2;   // x 3 units: 1.5 to 2 layers of P per step
        auto engine = Engine::create(options);
        StatsLog log;
        log.attach(*engine);
        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        const std::vector<RequestId> leads = submit_leads(*engine, sink, nlohmann::json::array({prompts[0]}), 2, 30);
        engine->step_once();
        QTRY_VERIFY_WITH_TIMEOUT(!sink->get(leads.back()).tokens.empty(), 60000);
        const int64_t max_new = v.records["max_new_tokens"].get<int64_t>();
        const RequestId id = engine->submit(test::greedy_request(prompts[longest], max_new), sink);
        engine->set_paused(false);
        QVERIFY(sink->wait_finished(3));
        engine->wait_idle();
        engine->set_stats_listener(nullptr);
        QCOMPARE(sink->get(id).finishes.at(0).token_ids, v.records["greedy"][longest].get<std::vector<int64_t>>());
        int64_t encoding_steps = 0;
        for (const auto& s : log.steps) encoding_steps += s.step > 0 && s.prefill_tokens > 0;
        QCOMPARE(encoding_steps, int64_t(2));
    }

    // A KV cache that holds about one request: the others wait in the queue (nothing runs out
    // of memory) and every request still gets HF's tokens; one that could never fit fails clearly.
    void small_kv_cache_queues_instead_of_failing() {
        const auto v = test::load_variant("t5_v1_1");
        auto options = test::engine_options(v.dir);
        options.kv_cache_mb = 1;
        options.max_batch_tokens = int64_t(1) << 40;  // the cache is the limit here
        auto engine = Engine::create(options);
        StatsLog log;
        log.attach(*engine);
        run_all_and_compare(*engine, v, 3);
        engine->set_stats_listener(nullptr);
        int64_t most_rows = 0, queued = 0;
        for (const auto& s : log.steps) {
            most_rows = std::max(most_rows, s.rows);
            queued = std::max(queued, s.queue_depth);
            QVERIFY(s.kv_blocks_used <= s.kv_blocks_total);
        }
        QVERIFY2(most_rows < 3 * static_cast<int64_t>(v.records["prompts"].size()), "the cache limit never bit");
        QVERIFY(queued > 0);

        auto sink = std::make_shared<CollectingSink>();
        Request huge = test::greedy_request(v.records["prompts"][0], 1000000);
        const RequestId id = engine->submit(huge, sink);
        QVERIFY(sink->wait_until(id));
        const auto f = sink->get(id).finishes.at(0);
        QCOMPARE(f.reason, FinishReason::Error);
        QVERIFY2(f.error.find("KV cache") != std::string::npos, f.error.c_str());
    }

    // cancel_all() cancels what was submitted before it returned, never what comes after, even
    // when the engine thread takes both in one wake-up.
    void cancel_all_spares_later_submissions() {
        const auto v = test::load_variant("t5_v1_1");
        auto engine = test::make_engine(v.dir);
        const auto& prompts = v.records["prompts"];
        auto sink = std::make_shared<CollectingSink>();
        engine->set_paused(true);
        const RequestId a = engine->submit(test::greedy_request(prompts[0], 4), sink);
        const RequestId b = engine->submit(test::greedy_request(prompts[1], 4), sink);
        engine->cancel_all();
        const RequestId c = engine->submit(test::greedy_request(prompts[2], 4), sink);
        engine->set_paused(false);
        QVERIFY(sink->wait_finished(3));
        QCOMPARE(sink->get(a).finishes.at(0).reason, FinishReason::Cancelled);
        QCOMPARE(sink->get(b).finishes.at(0).reason, FinishReason::Cancelled);
        QVERIFY(sink->get(c).finishes.at(0).reason != FinishReason::Cancelled);
        QCOMPARE(sink->get(c).finishes.at(0).token_ids.size(), size_t(4));
    }

    void client_id_is_echoed_on_every_event() {
        const auto v = test::load_variant("bloom_4h");
        auto engine = test::make_engine(v.dir);
        auto sink = std::make_shared<CollectingSink>();
        Request r = test::greedy_request(v.records["prompts"][0], 3);
        r.client_id = "row-17";
        const RequestId id = engine->submit(r, sink);
        Request bad;
        bad.client_id = "bad-one";  // no prompt: fails at once, still echoed
        const RequestId failed = engine->submit(bad, sink);
        QVERIFY(sink->wait_finished(2));
        const auto rec = sink->get(id);
        QVERIFY(!rec.tokens.empty());
        for (const auto& t : rec.tokens) QCOMPARE(t.client_id, std::string("row-17"));
        QCOMPARE(rec.finishes.at(0).client_id, std::string("row-17"));
        QCOMPARE(sink->get(failed).finishes.at(0).client_id, std::string("bad-one"));
    }

    // set_stats_listener(nullptr) returns only after a listener call in flight has returned, so
    // that the caller may destroy what the listener uses.
    void replacing_the_listener_waits_for_a_call_in_flight() {
        const auto v = test::load_variant("t5_v1_1");
        auto engine = test::make_engine(v.dir);
        std::atomic<bool> entered{false}, done{false};
        engine->set_stats_listener([&](const StepStats&) {
            if (entered.exchange(true)) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            done = true;
        });
        auto sink = std::make_shared<CollectingSink>();
        engine->submit(test::greedy_request(v.records["prompts"][0], 4), sink);
        while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        engine->set_stats_listener(nullptr);
        QVERIFY(done.load());
        QVERIFY(sink->wait_finished(1));
    }

    // A forced BOS id outside the vocabulary is refused when the model loads, naming the file.
    void forced_bos_outside_the_vocabulary_fails_at_load() {
        namespace fs = std::filesystem;
        const auto v = test::load_variant("bart_plain");
        const fs::path dir = fs::temp_directory_path() / ("lorascope-forced-bos-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        for (const auto& entry : fs::directory_iterator(v.dir))
            if (entry.path().filename() != "generation_config.json") fs::copy(entry.path(), dir / entry.path().filename());
        std::ofstream(dir / "generation_config.json") << R"({"forced_bos_token_id": 999999, "eos_token_id": 2})";
        try {
            test::make_engine(dir.string());
            QFAIL("the model loaded");
        } catch (const Error& e) {
            const std::string what = e.what();
            QVERIFY2(what.find("generation_config.json") != std::string::npos && what.find("forced_bos_token_id 999999") != std::string::npos,
                     what.c_str());
        }
        fs::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestEngineBatching)
#include "test_engine_batching.moc"
