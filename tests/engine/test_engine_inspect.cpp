// What the model weighed (issue 32), against what Hugging Face + PEFT compute
// (tests/oracle/inspect_oracle.py), on T5, BART, BLOOM and the Llama family (llama with
// grouped-query attention, mistral past its sliding window, qwen2 with one key/value head and a
// tied head), with adapters: the top-k alternatives of every generated token (greedy, seeded
// sampling, several sampled rows) within 1e-5 of HF's topk(log_softmax(output_scores)), in mixed
// batches and equal alone; prompt log-probabilities (decoder-only prompts, encoder-decoder
// targets) within 1e-5 of HF's forward pass; best_of returning the candidate LoRAX's router picks
// among HF's sampled rows; truncate keeping the last tokens (text prompts as HF's tokenizer
// truncates them); and the combinations refused.
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "../lora/lora_records.h"
#include "collecting_sink.h"
#include "engine_test_support.h"
#include "inspect_records.h"
#include "lorascope/engine.h"
#include "lorascope/error.h"
#include "lorascope/params.h"
#include "lorascope/tokenizer.h"
#include "shared_skip.h"
#include "test_env.h"
#include "tokenizer/truncation.h"

using lorascope::FinishEvent;
using lorascope::FinishReason;
using lorascope::Request;
using lorascope::test::CollectingSink;
using json = nlohmann::json;

namespace {

const std::vector<std::string> kBases = {"t5", "bart", "bloom", "llama", "mistral", "qwen2"};

bool decoder_only(const std::string& base) { return base != "t5" && base != "bart"; }

std::unique_ptr<lorascope::Engine> engine_with_adapters(const lorascope::test::LoraBase& base) {
    auto engine = lorascope::test::make_engine(base.model_dir);
    for (const auto& name : base.adapter_names()) engine->load_adapter(name, base.adapter_dir(name));
    return engine;
}

Request request_for(const json& prompt, const json& params, const std::string& adapter = {}) {
    Request r;
    r.input_ids = prompt.get<std::vector<int64_t>>();
    r.params = lorascope::parse_generation_params(params.dump(), "inspect records");
    r.adapter = adapter;
    return r;
}

std::vector<const json*> records_of(const json& list, const std::string& base) {
    std::vector<const json*> out;
    for (const json& r : list)
        if (r["base"] == base) out.push_back(&r);
    return out;
}

// Submits every record at once (one mixed batch of adapters and settings); returns the finishes.
struct Run {
    std::vector<lorascope::RequestId> ids;
    std::shared_ptr<CollectingSink> sink = std::make_shared<CollectingSink>();
};

Run submit_all(lorascope::Engine& engine, const lorascope::test::LoraBase& base, const std::vector<const json*>& records) {
    Run run;
    for (const json* r : records)
        run.ids.push_back(engine.submit(
            request_for(base.records["prompts"][(*r)["prompt_index"].get<size_t>()], (*r)["params"], (*r)["adapter"]), run.sink));
    return run;
}

std::string describe(const json& r) {
    return r["base"].get<std::string>() + " adapter '" + r["adapter"].get<std::string>() + "' prompt " +
           std::to_string(r["prompt_index"].get<int>()) + " " + r["params"].dump();
}

// One record's expectations against one finish; returns what differs ("" when nothing does).
std::string check_alternatives(const json& r, const lorascope::test::CollectingSink::Record& rec) {
    using lorascope::test::compare_alternatives;
    using lorascope::test::compare_logprobs;
    if (rec.finishes.size() != 1) return "no finish";
    const FinishEvent& f = rec.finishes[0];
    if (f.reason == FinishReason::Error) return f.error;
    const json& rows = r["rows"];
    const bool logprobs = r["params"].value("logprobs", false);
    const double temperature = lorascope::test::sampling_temperature(r["params"]);
    if (rows.size() == 1) {
        if (f.token_ids != rows[0]["tokens"].get<std::vector<int64_t>>()) return "tokens differ";
        if (auto d = compare_alternatives(f.alternatives, rows[0]["alternatives"], temperature); !d.empty()) return d;
        if (logprobs)
            if (auto d = compare_logprobs(f.logprobs, rows[0]["logprobs"], temperature); !d.empty()) return d;
        // What streamed is what finished.
        if (rec.tokens.size() != f.alternatives.size()) return "streamed tokens and alternatives differ in count";
        for (size_t t = 0; t < rec.tokens.size(); ++t)
            if (rec.tokens[t].alternatives.size() != f.alternatives[t].size() ||
                (!f.alternatives[t].empty() && rec.tokens[t].alternatives[0].token_id != f.alternatives[t][0].token_id))
                return "streamed alternatives differ at token " + std::to_string(t);
        return {};
    }
    if (f.sequences.size() != rows.size()) return "wrong number of sequences";
    for (size_t k = 0; k < rows.size(); ++k) {
        if (f.sequences[k].token_ids != rows[k]["tokens"].get<std::vector<int64_t>>()) return "sequence tokens differ";
        if (auto d = compare_alternatives(f.sequences[k].alternatives, rows[k]["alternatives"], temperature); !d.empty())
            return d;
        if (auto d = compare_logprobs(f.sequences[k].logprobs, rows[k]["logprobs"], temperature); !d.empty()) return d;
    }
    return compare_alternatives(f.alternatives, rows[0]["alternatives"], temperature);
}

bool same_alternatives(const std::vector<std::vector<lorascope::TokenAlternative>>& a,
                       const std::vector<std::vector<lorascope::TokenAlternative>>& b) {
    if (a.size() != b.size()) return false;
    for (size_t t = 0; t < a.size(); ++t) {
        if (a[t].size() != b[t].size()) return false;
        for (size_t k = 0; k < a[t].size(); ++k)
            if (a[t][k].token_id != b[t][k].token_id || a[t][k].logprob != b[t][k].logprob) return false;
    }
    return true;
}

// The largest difference between two runs' alternatives, or infinity when their ids differ; each
// difference is divided by logprob_scale, as against HF, so that 1e-5 means what it means there: a
// sampled BART row at temperature 0.8 differed by 1.1e-5 on an AVX2-only Zen 3 (1.25e-5 is its bound).
double alternatives_gap(const std::vector<std::vector<lorascope::TokenAlternative>>& a,
                        const std::vector<std::vector<lorascope::TokenAlternative>>& b, double temperature) {
    constexpr double kApart = std::numeric_limits<double>::infinity();
    if (a.size() != b.size()) return kApart;
    double gap = 0;
    for (size_t t = 0; t < a.size(); ++t) {
        if (a[t].size() != b[t].size()) return kApart;
        for (size_t k = 0; k < a[t].size(); ++k) {
            if (a[t][k].token_id != b[t][k].token_id) return kApart;
            const double diff = std::abs(double(a[t][k].logprob) - double(b[t][k].logprob));
            gap = std::max(gap, diff / lorascope::test::logprob_scale(b[t][k].logprob, temperature));
        }
    }
    return gap;
}

// The rows of a best_of record whose mean logprob (HF's, as LoRAX's router sums them) is within the
// logprob bound of the best row's: HF's choice among them is decided by last bits.
std::vector<size_t> tied_for_best(const json& r, double temperature) {
    std::vector<size_t> tied;
    const double best = r["best_mean_logprob"].get<double>();
    for (size_t k = 0; k < r["rows"].size(); ++k) {
        const auto logprobs = r["rows"][k]["logprobs"].get<std::vector<float>>();
        float total = 0;
        for (float lp : logprobs) total += lp;
        const float mean = total / static_cast<float>(logprobs.size());
        const double bound = lorascope::test::kLogprobTolerance * lorascope::test::logprob_scale(best, temperature);
        if (std::abs(double(mean) - best) <= bound) tied.push_back(k);
    }
    return tied;
}

FinishEvent run_alone(lorascope::Engine& engine, Request request) {
    auto sink = std::make_shared<CollectingSink>();
    const lorascope::RequestId id = engine.submit(std::move(request), sink);
    if (!sink->wait_until(id)) throw std::runtime_error("request did not finish");
    return sink->get(id).finishes.at(0);
}

}  // namespace

class TestEngineInspect : public QObject {
    Q_OBJECT
    json records_;
    std::map<const json*, FinishEvent> batched_;   // alternatives runs as they finished in mixed batches

private Q_SLOTS:
    void initTestCase() { records_ = lorascope::test::load_inspect_records(); }
    void cleanupTestCase() {
        const auto& d = lorascope::test::deviation();
        qInfo("largest deviation from HF over %lld log-probabilities: %.3g absolute, %.3g relative",
              static_cast<long long>(d.compared), d.absolute, d.relative);
    }

    // Every alternatives run of a base at once: greedy and sampled rows, base model and two
    // adapters side by side. Tokens, alternatives (ids and order; logprobs within 1e-5) and logprobs
    // are HF's; several sampled rows carry their own; the streamed events carry the same.
    void alternatives_match_hf_in_mixed_batches() {
        int runs = 0, fewer_than_asked = 0, rows_checked = 0;
        for (const auto& name : kBases) {
            const auto base = lorascope::test::load_lora_base(name);
            auto engine = engine_with_adapters(base);
            const auto records = records_of(records_["alternatives"], name);
            QVERIFY(records.size() >= 40);
            Run run = submit_all(*engine, base, records);
            QVERIFY(run.sink->wait_finished(records.size()));
            for (size_t i = 0; i < records.size(); ++i) {
                const auto rec = run.sink->get(run.ids[i]);
                const std::string diff = check_alternatives(*records[i], rec);
                QVERIFY2(diff.empty(), (describe(*records[i]) + ": " + diff).c_str());
                batched_[records[i]] = rec.finishes[0];
                ++runs;
                const int64_t k = (*records[i])["params"]["top_alternatives"].get<int64_t>();
                for (const auto& token : rec.finishes[0].alternatives) {
                    ++rows_checked;
                    fewer_than_asked += static_cast<int64_t>(token.size()) < k ? 1 : 0;
                }
            }
        }
        QVERIFY(runs >= 150 && rows_checked >= 1000);
        QVERIFY(fewer_than_asked > 0);   // top_k 4 rules out the rest: -inf alternatives are not shown
    }

    // The same requests one at a time: the very same tokens and alternative ids, alternative
    // logprobs within 1e-5 (HF's own tolerance, scaled as against HF: alternatives_gap). Not bit
    // for bit: the last bits follow the batch the request joined (likely the products' summation
    // order, which BLAS picks by row count; not traced to one operation). Seen on every family:
    // llama, mistral and qwen2 rows in turn (CI, 2026-12-01), a sampled T5 row under load
    // (2026-12-02). The count of rows that were bit for bit is printed.
    void alternatives_batched_equal_alone() {
        QVERIFY(!batched_.empty());
        int compared = 0, identical = 0;
        double worst_gap = 0;
        for (const auto& name : kBases) {
            const auto base = lorascope::test::load_lora_base(name);
            auto engine = engine_with_adapters(base);
            for (const json* r : records_of(records_["alternatives"], name)) {
                if ((*r)["prompt_index"] != 1) continue;   // one prompt per setting and adapter keeps it short
                const FinishEvent alone = run_alone(
                    *engine, request_for(base.records["prompts"][1], (*r)["params"], (*r)["adapter"]));
                const auto found = batched_.find(r);
                QVERIFY(found != batched_.end());
                const FinishEvent& batched = found->second;
                QVERIFY2(alone.token_ids == batched.token_ids, describe(*r).c_str());
                const double gap = alternatives_gap(alone.alternatives, batched.alternatives,
                                                    lorascope::test::sampling_temperature((*r)["params"]));
                worst_gap = std::max(worst_gap, gap);
                QVERIFY2(gap <= lorascope::test::kLogprobTolerance, (describe(*r) + ": " + std::to_string(gap)).c_str());
                identical += same_alternatives(alone.alternatives, batched.alternatives) ? 1 : 0;
                ++compared;
            }
        }
        QVERIFY(compared >= 50);
        qInfo("batched against alone: %d of %d rows bit for bit, largest alternative logprob difference %.3g (scaled)",
              identical, compared, worst_gap);
    }

    // Decoder-only: each prompt token given those before it (the first has none); encoder-decoder:
    // each token of the target. Every adapter's requests in one batch.
    void prompt_logprobs_match_hf() {
        int tokens = 0;
        for (const auto& name : kBases) {
            const auto base = lorascope::test::load_lora_base(name);
            auto engine = engine_with_adapters(base);
            const auto records = records_of(records_["prompt_logprobs"], name);
            QVERIFY(records.size() >= 12);
            auto sink = std::make_shared<CollectingSink>();
            std::vector<lorascope::RequestId> ids;
            for (const json* r : records) {
                Request req = request_for(base.records["prompts"][(*r)["prompt_index"].get<size_t>()],
                                          json{{"max_new_tokens", 3}, {"prompt_logprobs", true}}, (*r)["adapter"]);
                if (r->contains("target_ids")) req.target_ids = (*r)["target_ids"].get<std::vector<int64_t>>();
                ids.push_back(engine->submit(std::move(req), sink));
            }
            QVERIFY(sink->wait_finished(ids.size()));
            for (size_t i = 0; i < records.size(); ++i) {
                const json& r = *records[i];
                const FinishEvent f = sink->get(ids[i]).finishes.at(0);
                QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
                QCOMPARE(f.prompt_logprobs.size(), r["tokens"].size());
                for (size_t t = 0; t < f.prompt_logprobs.size(); ++t, ++tokens) {
                    const auto& got = f.prompt_logprobs[t];
                    QCOMPARE(got.token_id, r["tokens"][t].get<int64_t>());
                    QCOMPARE(got.logprob.has_value(), !r["logprobs"][t].is_null());
                    if (got.logprob)
                        QVERIFY2(lorascope::test::close_logprob(*got.logprob, r["logprobs"][t].get<double>()),
                                 (name + " token " + std::to_string(t) + ": " + std::to_string(*got.logprob) + " vs HF " +
                                  r["logprobs"][t].dump()).c_str());
                }
            }
        }
        QVERIFY(tokens >= 150);
    }

    // best_of n with seed s draws HF's n rows of num_return_sequences=n after manual_seed(s), and
    // returns first the one LoRAX's router picks (highest mean logprob), then the others in order.
    // Candidates whose means HF itself has within the logprob bound of the best tie for it: which
    // one wins is the last bits' choice (seen: a BLOOM request whose rows 0 and 3 are the same
    // tokens, HF picked row 3 by a last-bit margin, an AVX2 Zen 3 here row 0), so any of them may
    // come first, the others following in order.
    void best_of_returns_loraxs_choice() {
        int runs = 0, not_first = 0;
        for (const auto& name : kBases) {
            const auto base = lorascope::test::load_lora_base(name);
            auto engine = engine_with_adapters(base);
            const auto records = records_of(records_["best_of"], name);
            Run run = submit_all(*engine, base, records);
            QVERIFY(run.sink->wait_finished(records.size()));
            for (size_t i = 0; i < records.size(); ++i, ++runs) {
                const json& r = *records[i];
                const FinishEvent f = run.sink->get(run.ids[i]).finishes.at(0);
                QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
                const size_t best = r["best_index"].get<size_t>();
                not_first += best != 0 ? 1 : 0;
                QCOMPARE(f.sequences.size(), r["rows"].size());
                const double temperature = lorascope::test::sampling_temperature(r["params"]);
                bool ordered = false;
                for (size_t first : tied_for_best(r, temperature)) {
                    std::vector<size_t> order{first};
                    for (size_t k = 0; k < r["rows"].size(); ++k)
                        if (k != first) order.push_back(k);
                    bool same = f.token_ids == r["rows"][first]["tokens"].get<std::vector<int64_t>>();
                    for (size_t k = 0; k < order.size(); ++k)
                        same = same && f.sequences[k].token_ids == r["rows"][order[k]]["tokens"].get<std::vector<int64_t>>();
                    ordered = ordered || same;
                }
                QVERIFY2(ordered, describe(r).c_str());
                QVERIFY(f.sequences[0].score.has_value());
                QVERIFY2(lorascope::test::close_logprob(*f.sequences[0].score, r["best_mean_logprob"].get<double>(), temperature),
                         describe(r).c_str());
                if (r["params"].value("logprobs", false))
                    QVERIFY(lorascope::test::compare_logprobs(f.logprobs, r["rows"][best]["logprobs"], temperature).empty());
            }
        }
        QVERIFY(runs >= 30);
        QVERIFY(not_first > 0);   // the choice is not simply the first candidate
    }

    // truncate N on ready ids keeps the last N: the output is that of a request sent those N.
    void truncate_keeps_the_last_ids() {
        int changed = 0;
        for (const auto& name : kBases) {
            const auto base = lorascope::test::load_lora_base(name);
            auto engine = engine_with_adapters(base);
            const auto prompt = base.records["prompts"][2].get<std::vector<int64_t>>();
            for (int64_t n : {1, 3, 6}) {
                if (static_cast<int64_t>(prompt.size()) <= n) continue;
                const FinishEvent cut = run_alone(*engine, request_for(prompt, {{"max_new_tokens", 6}, {"truncate", n}, {"prompt_logprobs", decoder_only(name)}}, "all"));
                const std::vector<int64_t> last(prompt.end() - n, prompt.end());
                const FinishEvent direct = run_alone(*engine, request_for(last, {{"max_new_tokens", 6}}, "all"));
                const FinishEvent whole = run_alone(*engine, request_for(prompt, {{"max_new_tokens", 6}}, "all"));
                QVERIFY2(cut.reason != FinishReason::Error, cut.error.c_str());
                QCOMPARE(cut.usage.prompt_tokens, n);
                QCOMPARE(cut.token_ids, direct.token_ids);
                if (decoder_only(name)) {
                    QCOMPARE(static_cast<int64_t>(cut.prompt_logprobs.size()), n);
                    QCOMPARE(cut.prompt_logprobs.front().token_id, last.front());
                }
                changed += cut.token_ids != whole.token_ids ? 1 : 0;
            }
        }
        QVERIFY(changed > 0);   // truncation reached the model: some outputs differ from the whole prompt's
    }

    // Text prompts: HF's tokenizer(text, truncation=True, max_length=N) with truncation_side left
    // (special tokens kept), on the real T5 and BART tokenizers; and through the engine on a T5
    // with the real tokenizer.
    void text_truncation_matches_hf_tokenizers() {
        const json& cases = records_["truncate"];
        if (cases.empty()) LORASCOPE_SKIP_SHARED("no real tokenizers in ../shared/tokenizers: no truncation cases");
        std::map<std::string, std::unique_ptr<lorascope::Tokenizer>> tokenizers;
        for (const json& c : cases) {
            const std::string name = c["tokenizer"];
            if (!tokenizers.count(name))
                tokenizers[name] = lorascope::load_tokenizer(lorascope::test::shared_tokenizers() + "/" + name);
            const auto& tok = *tokenizers[name];
            QCOMPARE(tok.encode(c["text"].get<std::string>()), c["full_ids"].get<std::vector<int64_t>>());
            QCOMPARE(lorascope::tokenizer::truncate_left(tok, c["text"], c["truncate"].get<int64_t>(), "test"),
                     c["ids"].get<std::vector<int64_t>>());
        }
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::tokenizer::truncate_left(*tokenizers.begin()->second,
                                                                                      "a b c d e f g h", 1, "test"));
        const std::string t5_tok = lorascope::test::oracle_dir() + "/models/t5_tok/model";
        if (!lorascope::test::exists(t5_tok)) return;
        auto engine = lorascope::test::make_engine(t5_tok);
        for (const json& c : cases) {
            if (c["tokenizer"] != "t5") continue;
            Request text;
            text.prompt = c["text"].get<std::string>();
            text.params.max_new_tokens = 4;
            text.params.truncate = c["truncate"].get<int64_t>();
            const FinishEvent cut = run_alone(*engine, text);
            const FinishEvent ids = run_alone(*engine, request_for(c["ids"], {{"max_new_tokens", 4}}));
            QCOMPARE(cut.usage.prompt_tokens, static_cast<int64_t>(c["ids"].size()));
            QCOMPARE(cut.token_ids, ids.token_ids);
        }
    }

    // What cannot be combined fails with the reason, as a finish event (the engine) or an error
    // (the parameter parser).
    void conflicting_requests_fail_with_a_reason() {
        auto expect_error = [](lorascope::Engine& engine, Request r, const char* says) {
            const FinishEvent f = run_alone(engine, std::move(r));
            QCOMPARE(f.reason, FinishReason::Error);
            QVERIFY2(f.error.find(says) != std::string::npos, f.error.c_str());
        };
        const auto t5 = lorascope::test::load_lora_base("t5");
        const auto bloom = lorascope::test::load_lora_base("bloom");
        auto seq2seq = lorascope::test::make_engine(t5.model_dir);
        auto causal = lorascope::test::make_engine(bloom.model_dir);
        const json p = bloom.records["prompts"][1];
        expect_error(*causal, request_for(p, {{"num_beams", 2}, {"top_alternatives", 2}}), "top_alternatives");
        expect_error(*causal, request_for(p, {{"best_of", 2}}), "needs sampling");
        expect_error(*causal, request_for(p, {{"best_of", 2}, {"do_sample", true}, {"num_return_sequences", 2}}), "best_of");
        expect_error(*causal, request_for(p, {{"best_of", 2}, {"do_sample", true}, {"stop", "x"}}), "best_of");
        Request with_target = request_for(p, {{"prompt_logprobs", true}});
        with_target.target_ids = {5, 6};
        expect_error(*causal, with_target, "encoder-decoder");
        expect_error(*seq2seq, request_for(t5.records["prompts"][1], {{"prompt_logprobs", true}}), "target");
        Request target_only = request_for(t5.records["prompts"][1], json::object());
        target_only.target_ids = {5, 6};
        expect_error(*seq2seq, target_only, "prompt_logprobs");
        for (const char* bad : {R"({"top_alternatives": 21})", R"({"best_of": 17})", R"({"truncate": 0})",
                                R"({"best_of": 0})", R"({"top_alternatives": -1})", R"({"prompt_logprobs": 1})"})
            QVERIFY_THROWS_EXCEPTION(lorascope::Error, lorascope::parse_generation_params(bad));
    }
};

LORASCOPE_QTEST_GUILESS_MAIN(TestEngineInspect)
#include "test_engine_inspect.moc"
