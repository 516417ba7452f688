// Adapter merges per request (issue 32, LoRAX's merged_adapters) against PEFT 0.13's
// add_weighted_adapter (tests/oracle/inspect_oracle.py): for linear, ties (total and frequency
// signs), dare_linear and dare_ties (seeded as torch.manual_seed before the merge), on T5, BART,
// BLOOM, Llama (grouped-query attention), Mistral (sliding window) and Qwen2 (one key/value head,
// tied head), the merged adapter's greedy tokens equal HF + PEFT's, in one batch with each adapter
// alone and the base model. The registry builds a merge once, shares it, evicts it under the memory
// budget and rebuilds it, and forgets it when one of its adapters is unloaded; PEFT's own refusals
// (ranks that differ) and malformed merges fail with a reason.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "../engine/collecting_sink.h"
#include "../engine/engine_test_support.h"
#include "../engine/inspect_records.h"
#include "adapters/adapter_merge.h"
#include "adapters/adapter_registry.h"
#include "lora_records.h"
#include "lorascope/adapter.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "models/model.h"

using lorascope::AdapterMerge;
using lorascope::FinishReason;
using lorascope::Request;
using json = nlohmann::json;

namespace {

const std::vector<std::string> kBases = {"t5", "bart", "bloom", "llama", "mistral", "qwen2"};

std::string merge_adapter_dir(const std::string& base, const std::string& name) {
    return lorascope::test::inspect_dir() + "/merge/" + base + "/adapters/" + name;
}

const json& constituents_record(const json& merges, const std::string& base) {
    for (const json& m : merges)
        if (m["base"] == base && m.contains("constituents")) return m;
    throw std::runtime_error("no constituents record for " + base);
}

Request greedy(const json& prompt, int64_t new_tokens) {
    Request r;
    r.input_ids = prompt.get<std::vector<int64_t>>();
    r.params.max_new_tokens = new_tokens;
    return r;
}

AdapterMerge two_of(const std::string& a, const std::string& b) {
    AdapterMerge m;
    m.ids = {a, b};
    m.weights = {0.5, 0.5};
    return m;
}

}  // namespace

class TestLoraMerge : public QObject {
    Q_OBJECT
    json records_;

private Q_SLOTS:
    void initTestCase() { records_ = lorascope::test::load_inspect_records(); }

    void merged_adapters_match_peft() {
        int merged_runs = 0, differs_from_every_constituent = 0;
        for (const auto& base_name : kBases) {
            const auto base = lorascope::test::load_lora_base(base_name);
            auto engine = lorascope::test::make_engine(base.model_dir);
            for (const char* name : {"m_a", "m_b", "m_c"}) engine->load_adapter(name, merge_adapter_dir(base_name, name));
            const json& own = constituents_record(records_["merges"], base_name);
            auto sink = std::make_shared<lorascope::test::CollectingSink>();
            std::vector<std::pair<lorascope::RequestId, std::vector<int64_t>>> expected;
            std::vector<std::string> what;
            const json& prompts = base.records["prompts"];
            for (const json& m : records_["merges"]) {
                if (m["base"] != base_name || !m.contains("merged_adapters")) continue;
                for (size_t k = 0; k < prompts.size(); ++k) {
                    Request r = greedy(prompts[k], 12);
                    r.merge = lorascope::parse_adapter_merge(m["merged_adapters"].dump());
                    expected.push_back({engine->submit(r, sink), m["greedy"][k].get<std::vector<int64_t>>()});
                    what.push_back(base_name + " " + m["merged_adapters"].dump() + " prompt " + std::to_string(k));
                    bool differs = true;
                    for (const auto& [name, outputs] : own["constituents"].items()) differs = differs && outputs[k] != m["greedy"][k];
                    differs_from_every_constituent += differs ? 1 : 0;
                    ++merged_runs;
                }
            }
            // Neighbours in the same batch: each adapter alone.
            for (const auto& [name, outputs] : own["constituents"].items())
                for (size_t k = 0; k < prompts.size(); ++k) {
                    Request r = greedy(prompts[k], 12);
                    r.adapter = name;
                    expected.push_back({engine->submit(r, sink), outputs[k].get<std::vector<int64_t>>()});
                    what.push_back(base_name + " adapter " + name + " prompt " + std::to_string(k));
                }
            QVERIFY(sink->wait_finished(expected.size()));
            for (size_t i = 0; i < expected.size(); ++i) {
                const auto f = sink->get(expected[i].first).finishes.at(0);
                QVERIFY2(f.reason != FinishReason::Error, (what[i] + ": " + f.error).c_str());
                QVERIFY2(f.token_ids == expected[i].second,
                         (what[i] + " got " + json(f.token_ids).dump() + " PEFT " + json(expected[i].second).dump()).c_str());
            }
        }
        QVERIFY(merged_runs >= 60);
        QVERIFY(differs_from_every_constituent * 2 >= merged_runs);   // a merge is not one of its adapters
    }

    // PEFT draws DARE's masks module by module in named_modules() order: ours is that order.
    void module_order_is_hf_named_modules_order() {
        for (const auto& base_name : kBases) {
            const auto base = lorascope::test::load_lora_base(base_name);
            const auto model = lorascope::models::load_model(base.model_dir);
            const json& order = constituents_record(records_["merges"], base_name)["module_order"];
            std::vector<std::string> ours;
            for (const auto& site : model->linear_sites()) ours.push_back(site.name);
            std::vector<std::string> sorted;
            for (size_t i : lorascope::adapters::hf_module_order(ours, model->family())) sorted.push_back(ours[i]);
            std::vector<std::string> hf;
            for (const json& name : order)
                if (std::find(ours.begin(), ours.end(), name.get<std::string>()) != ours.end()) hf.push_back(name);
            QCOMPARE(sorted.size(), ours.size());
            QVERIFY2(sorted == hf, (base_name + ": " + json(sorted).dump() + " vs HF " + json(hf).dump()).c_str());
        }
    }

    // One build per merge while it stays resident; evicted under the budget, rebuilt when needed.
    void a_merge_is_built_once_and_kept_under_the_budget() {
        const auto base = lorascope::test::load_lora_base("bloom");
        const auto model = lorascope::models::load_model(base.model_dir);
        lorascope::adapters::AdapterRegistry unlimited(*model);
        for (const char* name : {"m_a", "m_b"}) unlimited.load(name, merge_adapter_dir("bloom", name));
        const int64_t adapters_bytes = unlimited.resident_bytes();
        const std::string name = unlimited.declare_merge(two_of("m_a", "m_b"));
        QCOMPARE(unlimited.declare_merge(two_of("m_a", "m_b")), name);   // equal merges share one entry
        QCOMPARE(unlimited.merges_built(), int64_t(0));                  // declared, not built
        {
            auto first = unlimited.acquire(name);
            auto second = unlimited.acquire(name);
            QVERIFY(first.weights() && first.weights() == second.weights());
        }
        QCOMPARE(unlimited.merges_built(), int64_t(1));
        for (const auto& info : unlimited.list()) QVERIFY(info.name.rfind("merge:", 0) != 0);   // not listed

        // A budget that holds the two adapters but not the merge too: the idle merge goes first
        // when the adapters are needed, and is rebuilt when the merge is.
        QVERIFY(unlimited.resident_bytes() > adapters_bytes);   // the merge's factors count
        lorascope::adapters::AdapterRegistry tight(*model, adapters_bytes);
        for (const char* a : {"m_a", "m_b"}) tight.load(a, merge_adapter_dir("bloom", a));
        const std::string tight_name = tight.declare_merge(two_of("m_a", "m_b"));
        { auto lease = tight.acquire(tight_name); }
        { auto a = tight.acquire("m_a"); auto b = tight.acquire("m_b"); }
        QVERIFY(!tight.resident(tight_name));
        { auto lease = tight.acquire(tight_name); }
        QCOMPARE(tight.merges_built(), int64_t(2));

        // Unloading an adapter forgets its merges.
        unlimited.unload("m_b");
        QVERIFY(!unlimited.has(name));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, unlimited.acquire(name));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, unlimited.declare_merge(two_of("m_a", "m_b")));
    }

    // PEFT's refusal of unequal ranks is known from the adapters' configs: the engine refuses such a
    // merge at submit, before admission. Paused, it never steps, yet the request finishes, and the
    // registry refuses the merge when it is declared, without building anything.
    void a_merge_of_unequal_ranks_is_refused_at_submit() {
        const auto base = lorascope::test::load_lora_base("bloom");
        auto engine = lorascope::test::make_engine(base.model_dir);
        engine->load_adapter("m_a", merge_adapter_dir("bloom", "m_a"));
        engine->load_adapter("all", base.adapter_dir("all"));   // r = 8 against m_a's 4
        int64_t steps = 0;
        engine->set_stats_listener([&](const lorascope::StepStats&) { ++steps; });
        engine->set_paused(true);
        auto sink = std::make_shared<lorascope::test::CollectingSink>();
        Request r = greedy(base.records["prompts"][1], 4);
        AdapterMerge merge = two_of("m_a", "all");
        merge.strategy = lorascope::MergeStrategy::Ties;
        r.merge = merge;
        const lorascope::RequestId id = engine->submit(std::move(r), sink);
        QVERIFY2(sink->wait_until(id, std::chrono::seconds(120)), "a refused merge waited for admission");
        const auto f = sink->get(id).finishes.at(0);
        QCOMPARE(f.reason, FinishReason::Error);
        QVERIFY2(f.error.find("same r") != std::string::npos && f.error.find("'m_a' has r 4, 'all' r 8") != std::string::npos,
                 f.error.c_str());
        QVERIFY2(f.error.find('\n') == std::string::npos, f.error.c_str());
        QCOMPARE(steps, int64_t(0));
        engine->set_paused(false);

        const auto model = lorascope::models::load_model(base.model_dir);
        lorascope::adapters::AdapterRegistry registry(*model);
        registry.load("m_a", merge_adapter_dir("bloom", "m_a"));
        registry.load("all", base.adapter_dir("all"));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, registry.declare_merge(two_of("m_a", "all")));
        QCOMPARE(registry.merges_built(), int64_t(0));
        std::map<std::string, int64_t> ranks = {{"a", 8}, {"b", 8}, {"c", 4}};
        lorascope::check_merge_ranks(two_of("a", "b"), ranks);
        lorascope::check_merge_ranks(two_of("a", "unknown"), ranks);   // unknown ids are the caller's to report
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::check_merge_ranks(two_of("b", "c"), ranks));
    }

    void refused_merges_say_why() {
        const auto base = lorascope::test::load_lora_base("bloom");
        auto engine = lorascope::test::make_engine(base.model_dir);
        engine->load_adapter("m_a", merge_adapter_dir("bloom", "m_a"));
        engine->load_adapter("all", base.adapter_dir("all"));   // r = 8 against m_a's 4
        auto sink = std::make_shared<lorascope::test::CollectingSink>();
        auto fails_with = [&](Request r, const char* says) {
            const lorascope::RequestId id = engine->submit(std::move(r), sink);
            QVERIFY(sink->wait_until(id));
            const auto f = sink->get(id).finishes.at(0);
            QCOMPARE(f.reason, FinishReason::Error);
            QVERIFY2(f.error.find(says) != std::string::npos, f.error.c_str());
        };
        Request r = greedy(base.records["prompts"][1], 4);
        r.merge = two_of("m_a", "all");
        fails_with(r, "same r");
        r.merge = two_of("m_a", "missing");
        fails_with(r, "missing");
        r.merge = two_of("m_a", "m_a");
        r.adapter = "all";
        fails_with(r, "not both");
        for (const char* bad : {R"({"ids": []})", R"({"ids": ["a", "b"], "weights": [1]})", R"({"ids": ["a"], "weights": [-1]})",
                                R"({"ids": ["a"], "density": 1.5})", R"({"ids": ["a"], "merge_strategy": "svd"})",
                                R"({"ids": ["a"], "majority_sign_method": "most"})", R"({"ids": ["a"], "colour": 1})"})
            QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::parse_adapter_merge(bad));
        // Merge names are exact and cannot be confused by what ids contain.
        AdapterMerge tricky;
        tricky.ids = {"a\",\"b"};
        tricky.weights = {1};
        QVERIFY(lorascope::merge_name(tricky) != lorascope::merge_name(two_of("a", "b")));
        QVERIFY(lorascope::merge_name(two_of("a", "b")) != lorascope::merge_name(two_of("b", "a")));
    }
};

QTEST_GUILESS_MAIN(TestLoraMerge)
#include "test_lora_merge.moc"
