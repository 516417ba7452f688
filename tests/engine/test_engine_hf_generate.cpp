// The engine against Hugging Face's own generate() with the options it claims to match, recorded by
// tests/oracle/generate_oracle.py: seeded sampling with every warper (and that sampling differs from
// greedy), logprobs against HF's output_scores, generation_config.json defaults for a request with no
// parameters, beams with LoRA adapters among greedy neighbours, and stop strings (across tokens,
// inside a multi-byte character, streamed with hold-back), num_return_sequences for beams (engine
// and the CLI's output line). Requests of one model run together in one engine, so every
// comparison is also one inside a mixed batch.
#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "collecting_sink.h"
#include "engine_test_support.h"
#include "lorascope/engine.h"
#include "lorascope/params.h"
#include "test_env.h"

using lorascope::FinishReason;
using lorascope::Request;
using lorascope::RequestId;
using lorascope::test::CollectingSink;
using lorascope::test::make_engine;
using json = nlohmann::json;

namespace {

json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing " + path + " (run the oracle_generate step)");
    json j;
    in >> j;
    return j;
}

std::string generate_dir() { return lorascope::test::oracle_dir() + "/generate"; }

Request request_for(const json& prompt, const json& params) {
    Request r;
    r.input_ids = prompt.get<std::vector<int64_t>>();
    r.params = lorascope::parse_generation_params(params.dump(), "generate records");
    return r;
}

// HF's recorded runs of one kind, by the model variant they ran on.
std::map<std::string, std::vector<const json*>> runs_by_variant(const json& records) {
    std::map<std::string, std::vector<const json*>> out;
    for (const json& r : records) out[r["variant"].get<std::string>()].push_back(&r);
    return out;
}

// Submits every run at once, each as its recorded prompt and parameters.
std::vector<RequestId> submit_runs(lorascope::Engine& engine, const json& variant_records,
                                   const std::vector<const json*>& runs, const std::shared_ptr<CollectingSink>& sink) {
    std::vector<RequestId> ids;
    for (const json* r : runs)
        ids.push_back(engine.submit(
            request_for(variant_records["prompts"][(*r)["prompt_index"].get<size_t>()], (*r)["params"]), sink));
    return ids;
}

std::string describe(const json& record) {
    json copy = record;
    for (const char* k : {"tokens", "logprobs", "hf_ids", "baseline_ids", "token_pieces", "outputs", "prompts"})
        copy.erase(k);
    return copy.dump();
}

}  // namespace

class TestEngineHfGenerate : public QObject {
    Q_OBJECT
    json records_;

private Q_SLOTS:
    void initTestCase() { records_ = read_json(generate_dir() + "/records.json"); }

    // torch.manual_seed(seed) then generate(do_sample=True, ...): the engine's per-request generator
    // draws what HF's global one draws, through top-k, top-p, typical-p, min-p, temperature and the
    // repetition penalty; the logprobs are log_softmax of HF's output_scores (the processed scores
    // the token was chosen from), for greedy and sampled runs alike.
    void seeded_sampling_and_logprobs_match_hf() {
        const auto by_variant = runs_by_variant(records_["sampling"]);
        QVERIFY(!by_variant.empty());
        int sampled_runs = 0, differing = 0;
        std::map<std::string, int> differing_per_setting;
        for (const auto& [variant, runs] : by_variant) {
            const auto v = lorascope::test::load_variant(variant);
            auto engine = make_engine(v.dir);
            auto sink = std::make_shared<CollectingSink>();
            const std::vector<RequestId> ids = submit_runs(*engine, v.records, runs, sink);
            QVERIFY(sink->wait_finished(ids.size()));
            std::map<size_t, std::vector<int64_t>> greedy;   // by prompt
            for (size_t i = 0; i < runs.size(); ++i) {
                const json& r = *runs[i];
                const auto rec = sink->get(ids[i]);
                QCOMPARE(rec.finishes.size(), size_t(1));
                const auto& f = rec.finishes[0];
                QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
                const auto want = r["tokens"].get<std::vector<int64_t>>();
                QVERIFY2(f.token_ids == want, describe(r).c_str());
                const auto want_lp = r["logprobs"].get<std::vector<double>>();
                QCOMPARE(f.logprobs.size(), want_lp.size());
                for (size_t t = 0; t < want_lp.size(); ++t) {
                    const double got = f.logprobs[t];
                    const bool both_inf = std::isinf(want_lp[t]) && std::isinf(got) && (want_lp[t] < 0) == (got < 0);
                    QVERIFY2(both_inf || std::abs(got - want_lp[t]) <= 1e-4 + 1e-4 * std::abs(want_lp[t]),
                             (describe(r) + " step " + std::to_string(t) + ": " + std::to_string(got) + " vs HF " +
                              std::to_string(want_lp[t])).c_str());
                }
                QCOMPARE(rec.tokens.size(), want.size());
                const size_t prompt = r["prompt_index"].get<size_t>();
                if (!r["params"].contains("do_sample")) greedy[prompt] = want;
            }
            for (size_t i = 0; i < runs.size(); ++i) {
                const json& r = *runs[i];
                if (!r["params"].contains("do_sample")) continue;
                ++sampled_runs;
                const bool differs = sink->get(ids[i]).finishes[0].token_ids != greedy.at(r["prompt_index"].get<size_t>());
                differing += differs ? 1 : 0;
                differing_per_setting[r["params"].dump()] += differs ? 1 : 0;
            }
        }
        // Sampling is not greedy in disguise: most seeded runs leave HF's greedy path (the tiny
        // models are peaked, so low temperatures often keep it), and every setting leaves it somewhere.
        QVERIFY(sampled_runs >= 20);
        for (const auto& [setting, n] : differing_per_setting) QVERIFY2(n > 0, setting.c_str());
        QVERIFY2(differing * 2 >= sampled_runs,
                 qPrintable(QStringLiteral("%1 of %2 sampled runs differ from greedy").arg(differing).arg(sampled_runs)));
    }

    // A model whose generation_config.json sets beams, length penalty, no-repeat n-gram, min length
    // and forced BOS: a request with no parameters gives what generate(input_ids) gives.
    void generation_config_defaults_match_hf() {
        QVERIFY(!records_["generation_config_defaults"].empty());
        for (const json& g : records_["generation_config_defaults"]) {
            auto engine = make_engine(generate_dir() + "/" + g["model_dir"].get<std::string>());
            auto sink = std::make_shared<CollectingSink>();
            std::vector<RequestId> ids;
            for (const json& p : g["prompts"]) {
                Request r;
                r.input_ids = p.get<std::vector<int64_t>>();
                ids.push_back(engine->submit(r, sink));
            }
            QVERIFY(sink->wait_finished(ids.size()));
            for (size_t i = 0; i < ids.size(); ++i) {
                const auto f = sink->get(ids[i]).finishes.at(0);
                QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
                QVERIFY2(f.token_ids == g["outputs"][i].get<std::vector<int64_t>>(),
                         (describe(g) + " prompt " + std::to_string(i)).c_str());
            }
        }
    }

    // Beam requests with an adapter share the batch with greedy neighbours on the base model and on
    // other adapters; each returns HF + PEFT's best hypothesis and each neighbour its greedy path.
    void beams_with_lora_among_greedy_neighbours_match_hf() {
        std::map<std::string, std::vector<const json*>> by_base;
        for (const json& r : records_["lora_beams"]) by_base[r["base"].get<std::string>()].push_back(&r);
        QVERIFY(!by_base.empty());
        for (const auto& [base, runs] : by_base) {
            const std::string root = lorascope::test::oracle_dir() + "/lora/" + base;
            const json lora = read_json(root + "/records.json");
            auto engine = make_engine(root + "/" + lora["model_dir"].get<std::string>());
            for (const json& run : lora["runs"])
                if (!run["adapter"].get<std::string>().empty())
                    engine->load_adapter(run["adapter"].get<std::string>(), root + "/" + run["adapter_dir"].get<std::string>());
            auto sink = std::make_shared<CollectingSink>();
            std::vector<std::pair<RequestId, std::vector<int64_t>>> expected;
            std::vector<std::string> what;
            for (const json* r : runs) {
                const size_t k = (*r)["prompt_index"].get<size_t>();
                Request beam = request_for(lora["prompts"][k], (*r)["params"]);
                beam.adapter = (*r)["adapter"].get<std::string>();
                expected.push_back({engine->submit(beam, sink), (*r)["tokens"].get<std::vector<int64_t>>()});
                what.push_back(describe(*r));
                // Greedy neighbours: every run of the LoRA oracle (base and each adapter) on this prompt.
                for (const json& run : lora["runs"]) {
                    Request g;
                    g.input_ids = lora["prompts"][k].get<std::vector<int64_t>>();
                    g.params.max_new_tokens = lora["max_new_tokens"].get<int64_t>();
                    g.adapter = run["adapter"].get<std::string>();
                    expected.push_back({engine->submit(g, sink), run["greedy"][k].get<std::vector<int64_t>>()});
                    what.push_back(base + " greedy neighbour, adapter '" + g.adapter + "', prompt " + std::to_string(k));
                }
            }
            QVERIFY(sink->wait_finished(expected.size()));
            for (size_t i = 0; i < expected.size(); ++i) {
                const auto f = sink->get(expected[i].first).finishes.at(0);
                QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
                QVERIFY2(f.token_ids == expected[i].second, what[i].c_str());
            }
        }
    }

    // generate(num_beams=B, num_return_sequences=N): the N best hypotheses, best first, with HF's
    // sequences_scores; torch.manual_seed(s) + generate(do_sample=True, num_return_sequences=N):
    // HF's N rows. FinishEvent's text and ids are the first.
    void num_return_sequences_match_hf() {
        const auto by_variant = runs_by_variant(records_["num_return_sequences"]);
        QVERIFY(!by_variant.empty());
        int beam_runs = 0, sampled_runs = 0, sampled_distinct = 0;
        for (const auto& [variant, runs] : by_variant) {
            const auto v = lorascope::test::load_variant(variant);
            auto engine = make_engine(v.dir);
            auto sink = std::make_shared<CollectingSink>();
            const std::vector<RequestId> ids = submit_runs(*engine, v.records, runs, sink);
            QVERIFY(sink->wait_finished(ids.size()));
            for (size_t i = 0; i < runs.size(); ++i) {
                const json& r = *runs[i];
                const auto f = sink->get(ids[i]).finishes.at(0);
                const auto want = r["sequences"].get<std::vector<std::vector<int64_t>>>();
                const bool beams = r["params"].contains("num_beams");
                (beams ? beam_runs : sampled_runs) += 1;
                QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
                QCOMPARE(f.sequences.size(), want.size());
                QCOMPARE(f.token_ids, want[0]);
                QCOMPARE(f.sequences[0].text, f.text);
                std::set<std::vector<int64_t>> distinct;
                for (size_t k = 0; k < want.size(); ++k) {
                    QVERIFY2(f.sequences[k].token_ids == want[k], (describe(r) + " sequence " + std::to_string(k)).c_str());
                    distinct.insert(want[k]);
                    if (!beams) continue;
                    const double hf = r["sequence_scores"][k].get<double>();
                    QVERIFY(f.sequences[k].score.has_value());
                    QVERIFY2(std::abs(*f.sequences[k].score - hf) <= 1e-4 + 1e-4 * std::abs(hf),
                             (describe(r) + " score " + std::to_string(*f.sequences[k].score) + " vs HF " + std::to_string(hf)).c_str());
                }
                if (!beams) sampled_distinct += distinct.size() > 1 ? 1 : 0;
                if (!beams) QVERIFY(!f.sequences[1].score.has_value());
            }
        }
        QVERIFY(beam_runs >= 6 && sampled_runs >= 6);
        QVERIFY2(sampled_distinct * 2 >= sampled_runs, "the sampled sequences of a request are mostly not all the same");
    }

    // lorascope-cli generate: the output line of such a request carries every sequence.
    void cli_output_line_carries_the_sequences() {
        const json* run = nullptr;
        for (const json& r : records_["num_return_sequences"])
            if (r["params"].contains("num_beams") && r["variant"] == "bart_plain") run = &r;
        QVERIFY(run);
        const auto v = lorascope::test::load_variant("bart_plain");
        const json line = {{"id", "nrs"},
                           {"input_ids", v.records["prompts"][(*run)["prompt_index"].get<size_t>()]},
                           {"params", (*run)["params"]}};
        QProcess cli;
        cli.start(QString::fromStdString(lorascope::test::cli_path()),
                  {"generate", "--model", QString::fromStdString(v.dir), "--threads", "1", "--input", "-", "--output", "-"});
        QVERIFY(cli.waitForStarted());
        cli.write(QByteArray::fromStdString(line.dump() + "\n"));
        cli.closeWriteChannel();
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        const json out = json::parse(cli.readAllStandardOutput().toStdString());
        QVERIFY2(out.contains("sequences"), out.dump().c_str());
        const auto want = (*run)["sequences"].get<std::vector<std::vector<int64_t>>>();
        QCOMPARE(out["sequences"].size(), want.size());
        QCOMPARE(out["token_ids"].get<std::vector<int64_t>>(), want[0]);
        for (size_t k = 0; k < want.size(); ++k) {
            QCOMPARE(out["sequences"][k]["token_ids"].get<std::vector<int64_t>>(), want[k]);
            QVERIFY(out["sequences"][k].contains("text") && out["sequences"][k].contains("score"));
        }
    }

    // generate(stop_strings=..., tokenizer=...): the engine stops after the same token as HF, its
    // text is HF's decoded text without the stop string, and what it streamed is exactly that text
    // (text that might begin a stop string was held back, never sent and retracted).
    void stop_strings_match_hf() {
        const json& stops = records_["stops"];
        auto engine = make_engine(generate_dir() + "/" + stops["model_dir"].get<std::string>());
        auto sink = std::make_shared<CollectingSink>();
        std::vector<RequestId> ids;
        std::set<std::string> kinds;
        for (const json& c : stops["cases"]) {
            json params = stops["params"];
            params["stop"] = c["stop"];
            ids.push_back(engine->submit(request_for(c["prompt"], params), sink));
            kinds.insert(c["kind"].get<std::string>());
        }
        for (const char* k : {"spans_tokens", "inside_utf8_char", "two_stops", "never_completes"})
            QVERIFY2(kinds.count(k), k);
        QVERIFY(sink->wait_finished(ids.size()));
        int held_back = 0;
        for (size_t i = 0; i < ids.size(); ++i) {
            const json& c = stops["cases"][i];
            const auto rec = sink->get(ids[i]);
            const auto& f = rec.finishes.at(0);
            const std::string what = describe(c) + " hf_text " + json(c["hf_text"]).dump();
            QVERIFY2(f.reason != FinishReason::Error, f.error.c_str());
            QVERIFY2(f.token_ids == c["hf_ids"].get<std::vector<int64_t>>(),
                     (what + " got " + json(f.token_ids).dump()).c_str());
            QVERIFY2((f.reason == FinishReason::Stop) == c["hf_stopped"].get<bool>(), what.c_str());
            QVERIFY2(f.text == c["expected_text"].get<std::string>(), (what + " got text " + json(f.text).dump()).c_str());
            QVERIFY2(rec.streamed == f.text, (what + " streamed " + json(rec.streamed).dump()).c_str());
            if (f.reason == FinishReason::Stop) {
                // The stop that matched is one asked for, and HF's text goes on with it right where
                // ours ends (with two stops, the earlier in the text).
                const auto asked = c["stop"].is_string() ? std::vector<std::string>{c["stop"].get<std::string>()}
                                                         : c["stop"].get<std::vector<std::string>>();
                const std::string hf_text = c["hf_text"].get<std::string>();
                QVERIFY2(std::find(asked.begin(), asked.end(), f.stop_sequence) != asked.end(),
                         (what + " stop_sequence " + json(f.stop_sequence).dump()).c_str());
                QVERIFY2(hf_text.find(f.stop_sequence) == f.text.size(), (what + " stop_sequence " + json(f.stop_sequence).dump()).c_str());
            } else {
                QVERIFY(f.stop_sequence.empty());
            }
            for (const auto& t : rec.tokens) held_back += t.text_delta.empty() ? 1 : 0;
        }
        QVERIFY(held_back > 0);   // some tokens' text was held back (a partial stop or a partial character)
    }
};

QTEST_GUILESS_MAIN(TestEngineHfGenerate)
#include "test_engine_hf_generate.moc"
