// Batch state operations the engine relies on: rows of different lengths in one cache, filter
// (drop, reorder, repeat rows as beams do) and concatenate (a freshly prefilled batch joins a
// running one). Every row's logits must stay those of running that request alone.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "lorascope/error.h"
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
        QVERIFY(idle.bytes_allocated() >= idle.bytes_in_use());
    }

    // Join, leave and fork are bookkeeping on block tables: the only bytes copied are one shared,
    // partly filled block before a forked row writes into it.
    void paged_cache_moves_only_what_it_must() {
        c10::InferenceMode guard;
        const int64_t bs = models::KvPool::kBlockSize;
        auto pool = std::make_shared<models::KvPool>(models::CacheShape{2, 3, 4}, 16, at::TensorOptions().dtype(at::kFloat));
        // Feeds n positions to every row; row b's position p holds base[b] + p (values: minus that).
        auto feed = [&](models::DecodeState& s, int64_t n, const std::vector<float>& base) {
            const std::vector<int64_t> added(static_cast<size_t>(s.rows()), n);
            const auto past = s.lengths();
            const models::PagedStep step = s.begin_forward(added, n);
            at::Tensor k = at::empty({s.rows(), 3, n, 4});
            for (int64_t b = 0; b < s.rows(); ++b)
                for (int64_t t = 0; t < n; ++t) k[b].select(1, t).fill_(base[static_cast<size_t>(b)] + static_cast<float>(past[static_cast<size_t>(b)] + t));
            for (int64_t l = 0; l < 2; ++l) step.write(l, k, -k);
            s.advance(added);
        };
        auto at_position = [&](const models::DecodeState& s, int64_t row, int64_t pos) {
            const auto& blocks = s.row(row).self.blocks;
            const int64_t block = blocks[static_cast<size_t>(pos / bs)], offset = pos % bs;
            return std::make_pair(pool->keys(1)[block][2][offset][3].item<float>(),
                                  pool->values(0)[block][1][offset][0].item<float>());
        };
        models::DecodeState state(pool);
        state.add_row();
        state.add_row();
        feed(state, bs + 4, {0, 1000});
        QCOMPARE(pool->used(), int64_t(4));
        QCOMPARE(pool->take_bytes_moved(), int64_t(0));
        QCOMPARE(at_position(state, 1, bs + 3), std::make_pair(1000.0f + bs + 3, -(1000.0f + bs + 3)));
        // A leave: row 0's blocks return to the pool; nothing is copied.
        state.filter({1});
        QCOMPARE(pool->used(), int64_t(2));
        QCOMPARE(pool->take_bytes_moved(), int64_t(0));
        QCOMPARE(at_position(state, 0, 5).first, 1005.0f);
        // A fork (two beams from one row): both share both blocks.
        state.filter({0, 0});
        QCOMPARE(pool->used(), int64_t(2));
        QCOMPARE(pool->take_bytes_moved(), int64_t(0));
        // The next write copies the shared, partly filled block once; the full block stays shared.
        feed(state, 1, {5000, 6000});
        QCOMPARE(pool->take_bytes_moved(), pool->bytes_per_block());
        QCOMPARE(pool->used(), int64_t(3));
        QCOMPARE(state.row(0).self.blocks[0], state.row(1).self.blocks[0]);
        QVERIFY(state.row(0).self.blocks[1] != state.row(1).self.blocks[1]);
        for (int64_t r = 0; r < 2; ++r) QCOMPARE(at_position(state, r, bs + 3).first, 1000.0f + bs + 3);
        QCOMPARE(at_position(state, 0, bs + 4).first, 5000.0f + bs + 4);
        QCOMPARE(at_position(state, 1, bs + 4).first, 6000.0f + bs + 4);
        // A join: another state's rows over the same pool are appended by reference.
        models::DecodeState fresh(pool);
        fresh.add_row();
        feed(fresh, 3, {7000});
        const int64_t used = pool->used();
        state.concatenate(std::move(fresh));
        QCOMPARE(state.rows(), int64_t(3));
        QCOMPARE(pool->used(), used);
        QCOMPARE(pool->take_bytes_moved(), int64_t(0));
        QCOMPARE(at_position(state, 2, 2).first, 7002.0f);
        // Every row gone: every block is back.
        state.erase(0, state.rows());
        QCOMPARE(pool->used(), int64_t(0));
    }

    // --kv-cache-dtype bfloat16 under float32 attention: the pool stores bfloat16 (half the bytes
    // per block), writes round to it, and the dense copies the prefill and generic paths attend
    // over come back in float32, widened exactly.
    void bfloat16_pool_rounds_on_write_and_reads_float32() {
        c10::InferenceMode guard;
        const models::CacheShape shape{2, 3, 4};
        models::KvPool f32(shape, 4, at::TensorOptions().dtype(at::kFloat));
        auto pool = std::make_shared<models::KvPool>(shape, 4, at::TensorOptions().dtype(at::kBFloat16), false, at::kFloat);
        QCOMPARE(pool->storage_dtype(), at::kBFloat16);
        QCOMPARE(pool->compute_dtype(), at::kFloat);
        QCOMPARE(pool->bytes_per_block() * 2, f32.bytes_per_block());
        models::DecodeState state(pool);
        state.add_row();
        state.add_row();
        const std::vector<int64_t> added = {5, 3};
        const models::PagedStep step = state.begin_forward(added, 5);
        const at::Tensor k = at::randn({2, 3, 5, 4}) * 100, v = at::randn({2, 3, 5, 4});
        for (int64_t l = 0; l < 2; ++l) step.write(l, k, v);
        state.advance(added);
        QCOMPARE(pool->keys(0).scalar_type(), at::kBFloat16);
        const models::PagedStep next = state.begin_forward({0, 0}, 1);
        const auto [keys, values] = next.gather_self(1);
        QCOMPARE(keys.scalar_type(), at::kFloat);
        const at::Tensor rounded_k = k.to(at::kBFloat16).to(at::kFloat), rounded_v = v.to(at::kBFloat16).to(at::kFloat);
        QVERIFY(at::equal(keys[0].narrow(1, 0, 5), rounded_k[0]));
        QVERIFY(at::equal(keys[1].narrow(1, 0, 3), rounded_k[1].narrow(1, 0, 3)));
        QVERIFY(at::equal(values[0].narrow(1, 0, 5), rounded_v[0]));
        QVERIFY(!at::equal(keys[0].narrow(1, 0, 5), k[0]));  // it was rounded: 100 x randn has bits to lose
    }

    // A fixed pool never grows: admission's reservations fail rather than over-commit, and an
    // allocation past the capacity is an error, not a reallocation.
    void fixed_pool_refuses_past_capacity() {
        c10::InferenceMode guard;
        models::KvPool pool(models::CacheShape{1, 1, 2}, 3, at::TensorOptions().dtype(at::kFloat));
        QVERIFY(pool.try_reserve(2));
        QVERIFY(!pool.try_reserve(2));
        QVERIFY(pool.try_reserve(1));
        pool.unreserve(3);
        QCOMPARE(pool.reserved(), int64_t(0));
        for (int i = 0; i < 3; ++i) QVERIFY(pool.allocate() > 0);
        QVERIFY_THROWS_EXCEPTION(std::exception, pool.allocate());
    }

    // Reservations that are negative, overflow, or release more than was reserved are refused
    // (release builds throw; debug builds assert) instead of being clamped into a count that
    // admits nothing ever again (issue 26).
    void reservations_refuse_negative_and_overflowing_counts() {
#ifndef NDEBUG
        QSKIP("debug builds stop at a malformed reservation (assert)");
#endif
        c10::InferenceMode guard;
        models::KvPool pool(models::CacheShape{1, 1, 2}, 3, at::TensorOptions().dtype(at::kFloat), /*growable=*/true);
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, pool.try_reserve(-1));
        QVERIFY(pool.try_reserve(2));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, pool.try_reserve(INT64_MAX));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, pool.unreserve(3));
        QVERIFY_THROWS_EXCEPTION(lorascope::Error, pool.unreserve(-1));
        QCOMPARE(pool.reserved(), int64_t(2));
        pool.unreserve(2);
        QCOMPARE(pool.reserved(), int64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestModelsBatchState)
#include "test_models_batch_state.moc"
