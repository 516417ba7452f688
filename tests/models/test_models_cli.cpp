// lorascope-cli generate and score, driven through JSON Lines like a script would, against HF.
#include <QtTest>

#include <fstream>
#include <map>
#include <sstream>

#include "lorascope/finish_json.h"
#include "cli_process.h"
#include "oracle_records.h"
#include "shared_skip.h"
#include "test_env.h"

using nlohmann::json;
using lorascope::FinishEvent;
using lorascope::FinishJsonOptions;
using lorascope::finish_from_json;

namespace {

// Runs lorascope-cli with `args`, feeding `input` on a file; returns the output lines as JSON.
std::vector<json> run_cli(const QStringList& args, const std::string& input, int* exit_code) {
    QStringList full = args;
    // generate runs the engine, which takes the device under test; score has no --device.
    if (full.value(0) == "generate") full << "--device" << QString::fromStdString(lorascope::test::test_device());
    QTemporaryDir dir;
    const QString in_path = dir.filePath("in.jsonl"), out_path = dir.filePath("out.jsonl");
    {
        std::ofstream in(in_path.toStdString());
        in << input;
    }
    QProcess p;
    p.start(QString::fromStdString(lorascope::test::cli_path()),
            QStringList(full) << "--input" << in_path << "--output" << out_path << "--threads" << "2");
    if (!p.waitForFinished(300000)) qWarning() << "lorascope-cli did not finish";
    *exit_code = p.exitCode();
    if (p.exitCode() != 0) qWarning() << p.readAllStandardError();
    std::vector<json> lines;
    std::ifstream out(out_path.toStdString());
    std::string line;
    while (std::getline(out, line))
        if (!line.empty()) lines.push_back(json::parse(line));
    return lines;
}

std::map<std::string, json> by_id(const std::vector<json>& lines) {
    std::map<std::string, json> m;
    for (const auto& l : lines) m[l["id"].is_string() ? l["id"].get<std::string>() : l["id"].dump()] = l;
    return m;
}

}  // namespace

class TestModelsCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(lorascope::test::exists(lorascope::test::cli_path()), "LORASCOPE_CLI not built"); }

    // Text in, text out: HF's decode of HF's greedy output, with the real T5 tokenizer and with a tiny
    // Llama carrying the demo pack's byte-level BPE.
    void generate_text_matches_hf_data() {
        QTest::addColumn<QString>("variant");
        QTest::newRow("t5_tok") << "t5_tok";
        QTest::newRow("llama_tok") << "llama_tok";
    }

    void generate_text_matches_hf() {
        QFETCH(QString, variant);
        const std::string tokenizers = lorascope::test::shared_tokenizers() + "/t5/spiece.model";
        if (variant == "t5_tok" && !lorascope::test::exists(tokenizers))
            LORASCOPE_SKIP_SHARED("the real T5 tokenizer files (LORASCOPE_SHARED_TOKENIZERS/t5) are absent; text parity not checked");
        const json rec = lorascope::test::load_records(variant.toStdString());
        std::ostringstream input;
        for (const auto& r : rec["requests"])
            input << json{{"id", r["id"]}, {"prompt", r["prompt"]}, {"params", {{"max_new_tokens", r["max_new_tokens"]}}}}.dump()
                  << "\n";
        int code = -1;
        auto out = by_id(run_cli({"generate", "--model", QString::fromStdString(lorascope::test::variant_model_dir(variant.toStdString())),
                                  "--max-batch-size", "3"},
                                 input.str(), &code));
        QCOMPARE(code, 0);
        QCOMPARE(out.size(), rec["requests"].size());
        for (const auto& r : rec["requests"]) {
            const json& o = out[r["id"].get<std::string>()];
            QVERIFY2(!o.contains("error"), o.dump().c_str());
            QCOMPARE(o["prompt_tokens"].get<size_t>(), r["prompt_ids"].size());
            QCOMPARE(o["token_ids"].dump(), r["token_ids"].dump());
            QCOMPARE(QString::fromStdString(o["text"].get<std::string>()), QString::fromStdString(r["text"].get<std::string>()));
            QCOMPARE(o["generated_tokens"].get<size_t>(), r["token_ids"].size());
        }
    }

    // tokenize on a Llama checkpoint: HF's ids for the prompts, and HF's text for the generated ids.
    void tokenize_llama_checkpoint_matches_hf() {
        const json rec = lorascope::test::load_records("llama_tok");
        const QString dir = QString::fromStdString(lorascope::test::variant_model_dir("llama_tok"));
        for (const auto& r : rec["requests"]) {
            const auto encoded = lorascope::test::run_cli_command({"tokenize", "--model", dir, "--text",
                                                                   QString::fromStdString(r["prompt"].get<std::string>())});
            QVERIFY2(encoded.exit_code == 0, encoded.err.c_str());
            QCOMPARE(json::parse(encoded.out)["ids"].dump(), r["prompt_ids"].dump());
            QStringList ids;
            for (const auto& t : r["token_ids"]) ids << QString::number(t.get<int64_t>());
            const auto decoded = lorascope::test::run_cli_command({"tokenize", "--model", dir, "--no-special", "--ids", ids.join(",")});
            QVERIFY2(decoded.exit_code == 0, decoded.err.c_str());
            QCOMPARE(QString::fromStdString(json::parse(decoded.out)["text"].get<std::string>()),
                     QString::fromStdString(r["text"].get<std::string>()));
        }
    }

    // input_ids requests in small static batches; a bad request gets an error, the others go on.
    void generate_ids_with_errors_data() {
        QTest::addColumn<QString>("variant");
        QTest::newRow("bloom_4h") << "bloom_4h";
        QTest::newRow("mistral_window") << "mistral_window";
    }

    void generate_ids_with_errors() {
        QFETCH(QString, variant);
        const json rec = lorascope::test::load_records(variant.toStdString());
        const auto& prompts = rec["prompts"];
        std::ostringstream input;
        for (size_t p = 0; p < prompts.size(); ++p)
            input << json{{"id", "p" + std::to_string(p)}, {"input_ids", prompts[p]}, {"params", {{"max_new_tokens", 32}}}}.dump()
                  << "\n";
        input << json{{"id", "bad-param"}, {"input_ids", prompts[0]}, {"params", {{"max_new_tokens", 4}, {"temprature", 0.5}}}}.dump() << "\n";
        input << json{{"id", "bad-id"}, {"input_ids", {1, 2, 999999}}}.dump() << "\n";
        input << "{not json\n";
        int code = -1;
        const auto lines = run_cli({"generate", "--model", QString::fromStdString(lorascope::test::variant_model_dir(variant.toStdString())),
                                    "--max-batch-size", "2"},
                                   input.str(), &code);
        QCOMPARE(code, 0);
        QCOMPARE(lines.size(), prompts.size() + 3);
        auto out = by_id(lines);
        for (size_t p = 0; p < prompts.size(); ++p) {
            const json& o = out["p" + std::to_string(p)];
            QVERIFY2(!o.contains("error"), o.dump().c_str());
            QCOMPARE(o["token_ids"].dump(), rec["greedy"][p].dump());
            QCOMPARE(o["finish_reason"].get<std::string>(), rec["finish_reason"][p].get<std::string>());
        }
        QVERIFY(out["bad-param"]["error"].get<std::string>().find("temprature") != std::string::npos);
        QVERIFY(out["bad-id"].contains("error"));
        QVERIFY(out["null"].contains("error"));  // the malformed line has no id
        // The core library's reader takes every line back, ids with their JSON types.
        for (const json& line : lines) {
            const FinishEvent e = finish_from_json(line.dump(), FinishJsonOptions{true});
            QCOMPARE(e.client_id, line["id"].dump());
            QCOMPARE(std::string(lorascope::to_string(e.reason)), line["finish_reason"].get<std::string>());
            QCOMPARE(json(e.token_ids).dump(), line.value("token_ids", json::array()).dump());
            QCOMPARE(e.error, line.value("error", std::string()));
        }
    }

    void score_matches_hf_loss() {
        for (const std::string variant : {"t5_v1_1", "bart_plain", "bloom_6h_postln", "llama_dynamic", "qwen2_window_dynamic"}) {
            const json rec = lorascope::test::load_records(variant);
            std::ostringstream input;
            for (size_t i = 0; i < rec["score"].size(); ++i)
                input << json{{"id", std::to_string(i)}, {"input_ids", rec["score"][i]["source_ids"]},
                              {"labels", rec["score"][i]["labels"]}}.dump()
                      << "\n";
            int code = -1;
            auto out = by_id(run_cli({"score", "--model", QString::fromStdString(lorascope::test::variant_model_dir(variant))},
                                     input.str(), &code));
            QCOMPARE(code, 0);
            for (size_t i = 0; i < rec["score"].size(); ++i) {
                const json& o = out[std::to_string(i)];
                QVERIFY2(o.contains("loss"), o.dump().c_str());
                QVERIFY(std::abs(o["loss"].get<double>() - rec["score"][i]["loss"].get<double>()) < 1e-5);
                QCOMPARE(o["token_logprobs"].size(), rec["score"][i]["labels"].size());
            }
        }
    }

    // A bad score line is refused naming its line and what is wrong; the lines around it are scored.
    void score_refuses_bad_lines_by_line() {
        const json rec = lorascope::test::load_records("t5_v1_1");
        const json good = {{"id", "good"}, {"input_ids", rec["score"][0]["source_ids"]}, {"labels", rec["score"][0]["labels"]}};
        json out_of_vocab = good;
        out_of_vocab["id"] = "oov";
        out_of_vocab["input_ids"] = json::array({5, -27});
        json bad_label = good;
        bad_label["id"] = "bad-label";
        bad_label["labels"] = json::array({3, -5});
        const std::string input = out_of_vocab.dump() + "\n" + good.dump() + "\n" + bad_label.dump() + "\n";
        int code = -1;
        auto out = by_id(run_cli({"score", "--model", QString::fromStdString(lorascope::test::variant_model_dir("t5_v1_1"))},
                                 input, &code));
        QCOMPARE(code, 0);
        QVERIFY2(out["good"].contains("loss"), out["good"].dump().c_str());
        const std::string oov = out["oov"]["error"].get<std::string>();
        QVERIFY2(oov.find("line 1") != std::string::npos && oov.find("-27") != std::string::npos, oov.c_str());
        const std::string label = out["bad-label"]["error"].get<std::string>();
        QVERIFY2(label.find("line 3") != std::string::npos && label.find("-5") != std::string::npos, label.c_str());
    }
};

LORASCOPE_QTEST_GUILESS_MAIN(TestModelsCli)
#include "test_models_cli.moc"
