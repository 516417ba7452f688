// `lorascope-cli generate` with issue 32's request fields, read back with finish_from_json (the
// one reader of a finished request's line): "alternatives", "prompt_logprobs", best_of's
// "sequences", "merged_adapters" and "adapter_source": "local" under --adapter-dir give what HF +
// PEFT recorded (tests/oracle/inspect_oracle.py); a local path outside --adapter-dir is refused on
// its own line while the other requests run.
#include <QTemporaryFile>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

#include "../lora/lora_records.h"
#include "cli_process.h"
#include "inspect_records.h"
#include "lorascope/finish_json.h"
#include "test_env.h"

using lorascope::FinishEvent;
using lorascope::FinishReason;
using json = nlohmann::json;

namespace {

const json* find_record(const json& list, const std::function<bool(const json&)>& wanted) {
    for (const json& r : list)
        if (wanted(r)) return &r;
    return nullptr;
}

// Runs generate over `lines`; returns the finish lines by id.
std::map<std::string, FinishEvent> generate(const QStringList& options, const std::vector<json>& lines) {
    QTemporaryFile input;
    if (!input.open()) throw std::runtime_error("cannot write the input file");
    for (const json& l : lines) input.write(QByteArray::fromStdString(l.dump() + "\n"));
    input.flush();
    QStringList args = {"generate", "--threads", "1", "--input", input.fileName()};
    args << options;
    const auto result = lorascope::test::run_cli_command(args);
    if (result.exit_code != 0) throw std::runtime_error("lorascope-cli failed: " + result.err);
    std::map<std::string, FinishEvent> out;
    std::istringstream text(result.out);
    for (std::string line; std::getline(text, line);) {
        FinishEvent e = lorascope::finish_from_json(line, {}, "output line");
        out[e.client_id] = std::move(e);
    }
    return out;
}

}  // namespace

class TestInspectCli : public QObject {
    Q_OBJECT
    json records_;

private Q_SLOTS:
    void initTestCase() { records_ = lorascope::test::load_inspect_records(); }

    void bloom_lines_carry_what_hf_computed() {
        const auto base = lorascope::test::load_lora_base("bloom");
        const json* alt = find_record(records_["alternatives"], [](const json& r) {
            return r["base"] == "bloom" && r["adapter"] == "all" && r["rows"].size() == 1 && r["params"].value("logprobs", false);
        });
        const json* plp = find_record(records_["prompt_logprobs"], [](const json& r) { return r["base"] == "bloom" && r["prompt_index"] == 2; });
        const json* best = find_record(records_["best_of"], [](const json& r) { return r["base"] == "bloom" && r["best_index"] != 0; });
        const json* merge = find_record(records_["merges"], [](const json& r) {
            return r["base"] == "bloom" && r.contains("merged_adapters") && r["merged_adapters"]["merge_strategy"] == "dare_ties";
        });
        QVERIFY(alt && plp && best && merge);
        const json& prompts = base.records["prompts"];
        const std::string adapters = lorascope::test::inspect_dir() + "/merge/bloom/adapters";
        std::vector<json> lines = {
            {{"id", "alt"}, {"input_ids", prompts[(*alt)["prompt_index"].get<size_t>()]}, {"adapter", "all"}, {"params", (*alt)["params"]}},
            {{"id", "plp"}, {"input_ids", prompts[2]}, {"adapter", (*plp)["adapter"]},
             {"params", {{"max_new_tokens", 2}, {"prompt_logprobs", true}}}},
            {{"id", "best"}, {"input_ids", prompts[(*best)["prompt_index"].get<size_t>()]}, {"adapter", (*best)["adapter"]},
             {"params", (*best)["params"]}},
            {{"id", "merge"}, {"input_ids", prompts[1]}, {"merged_adapters", (*merge)["merged_adapters"]},
             {"params", {{"max_new_tokens", 12}}}},
            {{"id", "local"}, {"input_ids", prompts[1]}, {"adapter", "m_c"}, {"adapter_source", "local"},
             {"params", {{"max_new_tokens", 12}}}},
            {{"id", "escape"}, {"input_ids", prompts[1]}, {"adapter", "../../../lora/bloom/adapters/all"},
             {"adapter_source", "local"}},
        };
        const auto out = generate({"--model", QString::fromStdString(base.model_dir), "--adapter",
                                   QString::fromStdString("all=" + base.adapter_dir("all")), "--adapter",
                                   QString::fromStdString("m_a=" + adapters + "/m_a"), "--adapter",
                                   QString::fromStdString("m_b=" + adapters + "/m_b"), "--adapter",
                                   QString::fromStdString("m_c=" + adapters + "/m_c"), "--adapter-dir",
                                   QString::fromStdString(adapters)},
                                  lines);
        QCOMPARE(out.size(), lines.size());
        const FinishEvent& a = out.at("alt");
        QCOMPARE(a.token_ids, (*alt)["rows"][0]["tokens"].get<std::vector<int64_t>>());
        QVERIFY(lorascope::test::compare_alternatives(a.alternatives, (*alt)["rows"][0]["alternatives"]).empty());
        QVERIFY(lorascope::test::compare_logprobs(a.logprobs, (*alt)["rows"][0]["logprobs"]).empty());
        const FinishEvent& p = out.at("plp");
        QCOMPARE(p.prompt_logprobs.size(), (*plp)["tokens"].size());
        QVERIFY(!p.prompt_logprobs[0].logprob.has_value());   // null in the line: the first token has none
        for (size_t t = 1; t < p.prompt_logprobs.size(); ++t)
            QVERIFY(lorascope::test::close_logprob(*p.prompt_logprobs[t].logprob, (*plp)["logprobs"][t].get<double>()));
        const FinishEvent& b = out.at("best");
        QCOMPARE(b.token_ids, (*best)["rows"][(*best)["best_index"].get<size_t>()]["tokens"].get<std::vector<int64_t>>());
        QCOMPARE(b.sequences.size(), (*best)["rows"].size());
        QVERIFY(b.sequences[0].score.has_value());
        QCOMPARE(out.at("merge").token_ids, (*merge)["greedy"][1].get<std::vector<int64_t>>());
        const json& own = *find_record(records_["merges"], [](const json& r) { return r["base"] == "bloom" && r.contains("constituents"); });
        QCOMPARE(out.at("local").token_ids, own["constituents"]["m_c"][1].get<std::vector<int64_t>>());
        const FinishEvent& escape = out.at("escape");
        QCOMPARE(escape.reason, FinishReason::Error);
        QVERIFY2(escape.error.find("'..'") != std::string::npos, escape.error.c_str());
    }

    // An encoder-decoder request scores its target; a local adapter without --adapter-dir is an error line.
    void t5_target_logprobs_and_local_without_a_directory() {
        const auto base = lorascope::test::load_lora_base("t5");
        const json* plp = find_record(records_["prompt_logprobs"], [](const json& r) {
            return r["base"] == "t5" && r["adapter"] == "all" && r["prompt_index"] == 1;
        });
        QVERIFY(plp);
        const std::vector<json> lines = {
            {{"id", "plp"}, {"input_ids", base.records["prompts"][1]}, {"adapter", "all"}, {"target_ids", (*plp)["target_ids"]},
             {"params", {{"max_new_tokens", 2}, {"prompt_logprobs", true}}}},
            {{"id", "local"}, {"input_ids", base.records["prompts"][1]}, {"adapter", "all"}, {"adapter_source", "local"}},
        };
        const auto out = generate({"--model", QString::fromStdString(base.model_dir), "--adapter",
                                   QString::fromStdString("all=" + base.adapter_dir("all"))},
                                  lines);
        const FinishEvent& p = out.at("plp");
        QVERIFY2(p.reason != FinishReason::Error, p.error.c_str());
        QCOMPARE(p.prompt_logprobs.size(), (*plp)["tokens"].size());
        for (size_t t = 0; t < p.prompt_logprobs.size(); ++t) {
            QCOMPARE(p.prompt_logprobs[t].token_id, (*plp)["tokens"][t].get<int64_t>());
            QVERIFY(lorascope::test::close_logprob(*p.prompt_logprobs[t].logprob, (*plp)["logprobs"][t].get<double>()));
        }
        QCOMPARE(out.at("local").reason, FinishReason::Error);
        QVERIFY2(out.at("local").error.find("--adapter-dir") != std::string::npos, out.at("local").error.c_str());
    }
};

QTEST_GUILESS_MAIN(TestInspectCli)
#include "test_inspect_cli.moc"
