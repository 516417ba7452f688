// HF's processors and warpers, composed by HF for each parameter set and applied to random scores
// by the oracle; ours must produce the same scores, alone and in heterogeneous batches.
#include <QtTest/QtTest>

#include <algorithm>
#include <map>
#include <random>

#include "sampling/logits_processor.h"
#include "sampling_records.h"

using namespace lorascope;
using namespace lorascope::sampling;

namespace {

struct Case {
    std::string name;
    ResolvedGenerationParams params;
    std::vector<std::vector<int64_t>> input_ids;
    int64_t input_ids_length = 0;
    at::Tensor scores, processed;
    std::vector<int64_t> argmax;
    int64_t hf_max_length = 0, hf_min_length = 0;
};

std::vector<Case> load_cases(const test::SamplingRecords& records) {
    std::vector<Case> cases;
    for (const auto& c : records.json["cases"]) {
        Case k;
        k.name = c["name"].get<std::string>();
        k.params = test::resolved_from(c);
        k.input_ids = c["input_ids"].get<std::vector<std::vector<int64_t>>>();
        k.input_ids_length = c["input_ids_length"].get<int64_t>();
        const int64_t rows = c["rows"].get<int64_t>(), vocab = c["vocab"].get<int64_t>();
        k.scores = records.floats(c["scores_offset"].get<int64_t>(), rows, vocab);
        k.processed = records.floats(c["processed_offset"].get<int64_t>(), rows, vocab);
        k.argmax = c["argmax"].get<std::vector<int64_t>>();
        k.hf_max_length = c["hf_max_length"].get<int64_t>();
        k.hf_min_length = c["hf_min_length"].get<int64_t>();
        cases.push_back(std::move(k));
    }
    return cases;
}

}  // namespace

class TestLogitsProcessors : public QObject {
    Q_OBJECT

    test::SamplingRecords records_;
    std::vector<Case> cases_;

private Q_SLOTS:
    void initTestCase() {
        records_ = test::load_sampling_records();
        if (records_.json.is_null())
            QFAIL(("oracle output missing under " + test::oracle_dir() + "/sampling (run the oracle_sampling step)").c_str());
        cases_ = load_cases(records_);
        QVERIFY(cases_.size() >= 20);
    }

    // Each parameter set alone: the scores HF's own processor list produced.
    void eachCaseAlone() {
        for (const Case& c : cases_) {
            std::vector<LogitsRow> rows;
            for (const auto& ids : c.input_ids) rows.push_back({&c.params, &ids, c.input_ids_length});
            at::Tensor scores = c.scores.clone();
            process_logits(scores, rows);
            test::compare_scores(scores, c.processed, c.name);
            at::Tensor best = scores.argmax(-1);
            for (size_t r = 0; r < c.argmax.size(); ++r)
                QVERIFY2(best[static_cast<int64_t>(r)].item<int64_t>() == c.argmax[r], (c.name + ": argmax differs").c_str());
        }
    }

    // Rows of every parameter set shuffled into one batch (per vocabulary size): each row must come
    // out as it did alone, whatever its neighbours ask for.
    void heterogeneousBatch() {
        std::map<int64_t, std::vector<std::pair<const Case*, int64_t>>> by_vocab;
        for (const Case& c : cases_)
            for (int64_t r = 0; r < c.scores.size(0); ++r) by_vocab[c.scores.size(1)].push_back({&c, r});
        std::mt19937 rng(7);
        for (auto& [vocab, members] : by_vocab) {
            std::shuffle(members.begin(), members.end(), rng);
            std::vector<LogitsRow> rows;
            std::vector<at::Tensor> inputs, expected;
            for (const auto& [c, r] : members) {
                rows.push_back({&c->params, &c->input_ids[r], c->input_ids_length});
                inputs.push_back(c->scores[r]);
                expected.push_back(c->processed[r]);
            }
            at::Tensor scores = at::stack(inputs);
            process_logits(scores, rows);
            test::compare_scores(scores, at::stack(expected), "mixed batch, vocab " + std::to_string(vocab));
        }
    }

    // Where HF skips a processor the scores must come back bit-identical (no needless arithmetic).
    void neutralParametersLeaveScoresUntouched() {
        for (const Case& c : cases_) {
            if (c.name != "greedy_defaults" && c.name != "greedy_ignores_warpers") continue;
            std::vector<LogitsRow> rows;
            for (const auto& ids : c.input_ids) rows.push_back({&c.params, &ids, c.input_ids_length});
            at::Tensor scores = c.scores.clone();
            process_logits(scores, rows);
            QVERIFY2(scores.equal(c.scores), c.name.c_str());
        }
    }

    // transformers' length bookkeeping: max_length = input length + max_new_tokens, min_length
    // likewise, as _prepare_generated_length leaves them.
    void lengthsMatchHf() {
        for (const Case& c : cases_) {
            QCOMPARE(c.input_ids_length + c.params.max_new_tokens_for(c.input_ids_length), c.hf_max_length);
            QCOMPARE(c.params.min_new_tokens_for(c.input_ids_length),
                     std::max<int64_t>(c.hf_min_length - c.input_ids_length, 0));
        }
    }
};

QTEST_APPLESS_MAIN(TestLogitsProcessors)
#include "test_logits_processors.moc"
