// Batch state operations the engine relies on: rows of different lengths in one cache, filter
// (drop, reorder, repeat rows as beams do) and concatenate (a freshly prefilled batch joins a
// running one). Every row's logits must stay those of running that request alone.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "lorascope/runtime.h"
#include "models/model.h"
#include "oracle_records.h"
#include "test_env.h"

using namespace lorascope;
using nlohmann::json;

namespace {

constexpr int kSteps = 8;

struct Row {
    size_t prompt = 0;   // which oracle prompt
    size_t step = 0;     // how many logits this row has produced
};

// Logits of `steps` steps of one request alone, fed the oracle's greedy tokens.
std::vector<at::Tensor> reference(const models::Model& m, const std::vector<int64_t>& prompt,
                                  const std::vector<int64_t>& tokens, int steps) {
    std::vector<at::Tensor> out;
    auto [state, logits] = m.prefill(models::TokenBatch::from_rows({prompt}, m.pad_token_id()));
    out.push_back(logits[0].clone());
    for (int s = 1; s < steps; ++s) {
        logits = m.decode_step(state, at::tensor({tokens[s - 1]}, at::TensorOptions().dtype(at::kLong)));
        out.push_back(logits[0].clone());
    }
    return out;
}

// Teacher tokens padded with the eos id so that every row can run kSteps steps.
std::vector<int64_t> teacher(const json& rec, size_t p) {
    auto t = rec["greedy"][p].get<std::vector<int64_t>>();
    while (t.size() < kSteps) t.push_back(rec["eos_token_id"].get<int64_t>());
    return t;
}

}  // namespace

class TestModelsBatchState : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { set_compute_threads(2); }

    void filter_and_concatenate_data() {
        QTest::addColumn<QString>("variant");
        for (const auto& v : test::model_variants()) QTest::newRow(v.c_str()) << QString::fromStdString(v);
    }

    void filter_and_concatenate() {
        QFETCH(QString, variant);
        c10::InferenceMode guard;
        const json rec = test::load_records(variant.toStdString());
        auto model = models::load_model(test::variant_model_dir(variant.toStdString()));
        const size_t n = rec["prompts"].size();
        QVERIFY(n >= 5);
        std::vector<std::vector<int64_t>> prompts, tokens;
        std::vector<std::vector<at::Tensor>> refs;
        for (size_t p = 0; p < n; ++p) {
            prompts.push_back(rec["prompts"][p].get<std::vector<int64_t>>());
            tokens.push_back(teacher(rec, p));
            refs.push_back(reference(*model, prompts[p], tokens[p], kSteps));
        }
        double worst = 0.0;
        auto check = [&](const std::vector<Row>& rows, const at::Tensor& logits) {
            QCOMPARE(logits.size(0), static_cast<int64_t>(rows.size()));
            for (size_t i = 0; i < rows.size(); ++i)
                worst = std::max(worst, (logits[i] - refs[rows[i].prompt][rows[i].step]).abs().max().item<double>());
        };
        auto step = [&](models::DecodeState& state, std::vector<Row>& rows) {
            std::vector<int64_t> next;
            for (auto& r : rows) next.push_back(tokens[r.prompt][r.step - 1]);
            at::Tensor logits = model->decode_step(state, at::tensor(next, at::TensorOptions().dtype(at::kLong)));
            check(rows, logits);
            for (auto& r : rows) ++r.step;
        };
        auto start = [&](const std::vector<size_t>& which, std::vector<Row>& rows) {
            std::vector<std::vector<int64_t>> batch;
            for (size_t p : which) {
                batch.push_back(prompts[p]);
                rows.push_back({p, 0});
            }
            auto [state, logits] = model->prefill(models::TokenBatch::from_rows(batch, model->pad_token_id()));
            check(rows, logits);
            for (auto& r : rows) r.step = 1;
            return std::move(state);
        };

        // A running batch of three rows of different prompt lengths takes two steps.
        std::vector<Row> rows;
        models::DecodeState state = start({0, 1, 2}, rows);
        step(state, rows);
        step(state, rows);
        // Row 1 finishes; the survivors change order.
        state.filter({2, 0});
        rows = {rows[2], rows[0]};
        step(state, rows);
        // Two new requests are prefilled as their own batch and join the running one.
        std::vector<Row> joining;
        models::DecodeState fresh = start({3, 4}, joining);
        state.concatenate(fresh);
        rows.insert(rows.end(), joining.begin(), joining.end());
        step(state, rows);
        // Beam-style reordering with repeats: one row continues twice, one is dropped.
        state.filter({0, 0, 2, 3});
        rows = {rows[0], rows[0], rows[2], rows[3]};
        step(state, rows);
        // Every row down to one, then back up by concatenation with a batch of one.
        state.filter({3});
        rows = {rows[3]};
        std::vector<Row> one;
        models::DecodeState single = start({1}, one);
        state.concatenate(single);
        rows.insert(rows.end(), one.begin(), one.end());
        step(state, rows);
        // A running batch that starts empty (the engine's idle state) takes a prefilled batch whole.
        models::DecodeState idle;
        idle.concatenate(state);
        step(idle, rows);
        QVERIFY2(worst < 1e-4, qPrintable(QString("%1: worst logit difference %2").arg(variant).arg(worst)));
        QVERIFY(state.bytes_allocated() >= state.self_cache.bytes_in_use());
    }

    void cache_grows_in_chunks() {
        models::KvCache cache(models::CacheShape{2, 3, 4}, 2, at::TensorOptions().dtype(at::kFloat), 16);
        cache.reserve(5);
        QCOMPARE(cache.capacity(), int64_t(16));
        const void* before = cache.keys(0).data_ptr();
        for (int t = 0; t < 16; ++t) {
            at::Tensor k = at::full({2, 3, 1, 4}, float(t));
            for (int l = 0; l < 2; ++l) cache.write(l, k, k);
            cache.advance(1);
        }
        // Sixteen steps fit the first chunk: no reallocation, no copy.
        QCOMPARE(cache.keys(0).data_ptr(), before);
        at::Tensor k = at::full({2, 3, 1, 4}, 16.0f);
        auto [keys, values] = cache.write(0, k, k);
        QCOMPARE(cache.capacity(), int64_t(32));
        QCOMPARE(keys.size(2), int64_t(17));
        for (int t = 0; t <= 16; ++t) QCOMPARE(keys[1][2][t][3].item<float>(), float(t));
        QCOMPARE(cache.bytes_in_use(), int64_t(2 * 16 * 2 * 2 * 3 * 4 * 4));
    }
};

QTEST_GUILESS_MAIN(TestModelsBatchState)
#include "test_models_batch_state.moc"
