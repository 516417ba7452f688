// lorascope::Scorer (lorascope/score.h) through the public API only: with each PEFT adapter of the
// oracle's bases attached, the log-probability of HF + PEFT's own greedy tokens is the one their
// recorded logits give, and the loss is the mean of those. This binary links lorascope_engine
// alone and includes nothing from engine/src, as the programs under app/ do.
#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lora_records.h"
#include "lorascope/error.h"
#include "lorascope/score.h"

using namespace lorascope;
using nlohmann::json;

namespace {

constexpr double kLogprobTolerance = 1e-4;

double log_softmax_at(const json& logits, int64_t token) {
    const auto row = logits.get<std::vector<double>>();
    const double top = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double x : row) sum += std::exp(x - top);
    return row[static_cast<size_t>(token)] - top - std::log(sum);
}

}  // namespace

class TestLoraScore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void adapters_score_as_hf_peft_data() {
        QTest::addColumn<QString>("base");
        for (const auto& b : test::lora_bases()) QTest::newRow(b.c_str()) << QString::fromStdString(b);
    }

    void adapters_score_as_hf_peft() {
        QFETCH(QString, base);
        // Scoring follows HF's loss for `labels`, and mBART's shift_tokens_right starts the decoder
        // from the last label, not from the start token its greedy path (recorded here) began with.
        // Its labelled losses are compared with HF's in test_models_parity instead.
        if (base == "mbart") QSKIP("mBART's label shift is not its generation path");
        const auto b = test::load_lora_base(base.toStdString());
        const auto scorer = Scorer::open(b.model_dir);
        for (const auto& name : b.adapter_names()) scorer->load_adapter(name, b.adapter_dir(name));

        int checked = 0;
        const auto& prompts = b.records["prompts"];
        for (const auto& run : b.records["runs"]) {
            const std::string adapter = run["adapter"].get<std::string>();
            for (size_t p = 0; p < prompts.size(); ++p) {
                const auto& steps = run["step_logits"][p];
                const auto& path = run["greedy"][p];
                if (steps.empty()) continue;
                std::vector<int64_t> labels;
                for (size_t s = 0; s < steps.size(); ++s) labels.push_back(path[s].get<int64_t>());
                const ScoreResult got = scorer->score(prompts[p].get<std::vector<int64_t>>(), labels, adapter);
                const QString where = QString("%1 prompt %2").arg(adapter.empty() ? "base" : adapter.c_str()).arg(p);
                QCOMPARE(got.scored_tokens, static_cast<int64_t>(labels.size()));
                QCOMPARE(got.token_logprobs.size(), labels.size());
                double sum = 0;
                for (size_t s = 0; s < labels.size(); ++s) {
                    const double expected = log_softmax_at(steps[s], labels[s]);
                    QVERIFY2(got.token_logprobs[s].has_value(), qPrintable(where));
                    QVERIFY2(std::abs(*got.token_logprobs[s] - expected) < kLogprobTolerance,
                             qPrintable(QString("%1 token %2: %3 vs HF %4").arg(where).arg(s)
                                            .arg(*got.token_logprobs[s], 0, 'g', 10).arg(expected, 0, 'g', 10)));
                    sum += expected;
                }
                QVERIFY2(std::abs(got.loss + sum / static_cast<double>(labels.size())) < kLogprobTolerance, qPrintable(where));
                ++checked;
            }
        }
        QVERIFY(checked > 0);
    }

    void an_unknown_adapter_is_not_found() {
        const auto b = test::load_lora_base("t5");
        const auto scorer = Scorer::open(b.model_dir);
        try {
            scorer->score(b.records["prompts"][0].get<std::vector<int64_t>>(), {1, 2}, "nobody");
            QFAIL("scored with an adapter that was never loaded");
        } catch (const Error& e) {
            QCOMPARE(e.kind(), ErrorKind::NotFound);
            QVERIFY2(std::string(e.what()).find("nobody") != std::string::npos, e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestLoraScore)
#include "test_lora_score.moc"
