// The CPU kernels the decode step runs instead of ATen's generic paths: oneDNN's sgemm for the
// linears, the single-query attention with per-row valid lengths, the greedy argmax, the KV cache's
// writes, and ATen's own operators split over our pool. Each is checked against the ATen
// computation it replaces, on shapes and strides the models produce.
#include <QtTest>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <limits>

#include "lorascope/runtime.h"
#include "models/attention.h"
#include "ops/cpu_gemm.h"
#include "models/layers.h"
#include "models/kv_pool.h"
#include "ops/aten_on_pool.h"
#include "ops/row_argmax.h"
#include "ops/single_query_attention.h"
#include "ops/thread_pool.h"

using namespace lorascope;

namespace {

bool close(const at::Tensor& a, const at::Tensor& b, double atol = 1e-4, double rtol = 1e-4) {
    return a.sizes() == b.sizes() && at::allclose(a, b, rtol, atol);
}

// Additive mask hiding row b's keys from valid[b] on, as the models build it.
at::Tensor length_mask(const std::vector<int64_t>& valid, int64_t L) {
    at::Tensor bias = at::zeros({static_cast<int64_t>(valid.size()), 1, 1, L});
    for (size_t b = 0; b < valid.size(); ++b)
        bias[static_cast<int64_t>(b)].narrow(-1, valid[b], L - valid[b]).fill_(std::numeric_limits<float>::lowest());
    return bias;
}

}  // namespace

class TestCpuKernels : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        set_compute_threads(2);
        at::manual_seed(7);
    }

    void linear_matches_aten_data() {
        QTest::addColumn<QList<qint64>>("shape");  // input shape; last is in_features
        QTest::addColumn<qint64>("out");
        QTest::addColumn<bool>("bias");
        QTest::newRow("decode rows, bias") << QList<qint64>{32, 1, 512} << qint64(1536) << true;
        QTest::newRow("decode rows") << QList<qint64>{32, 1, 512} << qint64(2048) << false;
        QTest::newRow("one row") << QList<qint64>{1, 1, 64} << qint64(96) << true;
        QTest::newRow("prefill") << QList<qint64>{3, 37, 128} << qint64(80) << false;
        QTest::newRow("2-d input") << QList<qint64>{5, 16} << qint64(33) << true;
        QTest::newRow("no rows") << QList<qint64>{0, 1, 16} << qint64(8) << true;
    }

    void linear_matches_aten() {
        QFETCH(QList<qint64>, shape);
        QFETCH(qint64, out);
        QFETCH(bool, bias);
        c10::InferenceMode guard;
        const std::vector<int64_t> sizes(shape.begin(), shape.end());
        at::Tensor x = at::randn(sizes);
        at::Tensor w = at::randn({out, sizes.back()}) * 0.1;
        at::Tensor b = bias ? at::randn({out}) : at::Tensor();
        if (!ops::cpu_gemm_applies(x, w)) QSKIP("this build or process runs CPU linears through ATen");
        const at::Tensor expected = bias ? at::linear(x, w, b) : at::matmul(x, w.t());
        const at::Tensor got = ops::linear_cpu(x, w, b);
        QVERIFY(got.is_contiguous());
        QVERIFY2(close(got, expected), qPrintable(QString("max difference %1")
                                                      .arg(sizes[0] ? (got - expected).abs().max().item<double>() : 0.0)));
    }

    void linear_takes_strided_rows() {
        // Inputs arrive as views: one part of a fused projection, or every other row.
        c10::InferenceMode guard;
        at::Tensor wide = at::randn({8, 1, 96});
        at::Tensor x = wide.narrow(-1, 32, 32);  // rows 96 floats apart
        at::Tensor w = at::randn({24, 32});
        if (!ops::cpu_gemm_applies(x, w)) QSKIP("this build or process runs CPU linears through ATen");
        QVERIFY(close(ops::linear_cpu(x, w, {}), at::matmul(x, w.t())));
        at::Tensor every_other = at::randn({10, 32}).slice(0, 0, 10, 2);
        QVERIFY(close(ops::linear_cpu(every_other, w, {}), at::matmul(every_other, w.t())));
        at::Tensor transposed = at::randn({32, 6}).t();  // last dimension not contiguous
        QVERIFY(close(ops::linear_cpu(transposed, w, {}), at::matmul(transposed, w.t())));
    }

    void single_query_attention_skips_masked_keys() {
        // Rows of different valid lengths, as in cross-attention over right-padded prompts and in a
        // cache whose rows joined at different steps.
        c10::InferenceMode guard;
        const int64_t B = 4, H = 3, L = 11, D = 8;
        const std::vector<int64_t> valid = {11, 1, 6, 9};
        at::Tensor q = at::randn({B, 1, H, D}).transpose(1, 2);   // strided over heads, as projections give
        at::Tensor k = at::randn({B, H, L + 5, D}).narrow(2, 0, L);  // a cache with spare capacity
        at::Tensor v = at::randn({B, H, L + 5, D}).narrow(2, 0, L);
        at::Tensor position = at::randn({1, H, 1, L});               // T5-like bias shared by all rows
        at::Tensor bias = position + length_mask(valid, L);
        QVERIFY(ops::single_query_attention_applies(q, k, v));

        const at::Tensor full = ops::attend_single_query(q, k, v, bias, 0.5);
        const at::Tensor trimmed = ops::attend_single_query(q, k, v, bias, 0.5, &valid);
        QVERIFY2(at::equal(full, trimmed), "skipping masked keys changed the result");

        // And both are attention: the generic formula on the same operands.
        at::Tensor scores = at::matmul(q, k.transpose(-1, -2)) * 0.5 + bias;
        at::Tensor expected = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({B, 1, H * D});
        QVERIFY(close(trimmed, expected, 1e-5, 1e-5));

        // What is behind a row's valid length never reaches the result.
        k.select(0, 1).narrow(1, 1, L - 1).fill_(std::numeric_limits<float>::quiet_NaN());
        v.select(0, 1).narrow(1, 1, L - 1).fill_(std::numeric_limits<float>::quiet_NaN());
        const at::Tensor with_garbage = ops::attend_single_query(q, k, v, bias, 0.5, &valid);
        QVERIFY(at::equal(with_garbage.select(0, 1), trimmed.select(0, 1)));
    }

    // A bfloat16 cache (--kv-cache-dtype bfloat16): the paged kernel widens each stored key and
    // value exactly, so it gives bit for bit what it gives over a float32 cache holding the same
    // rounded values; rows of different lengths in scattered blocks, with a bias, as in decoding.
    void paged_attention_reads_a_bfloat16_cache_exactly() {
        c10::InferenceMode guard;
        const int64_t B = 3, H = 4, D = 64, block = 16, blocks = 9, width = 3;
        const std::vector<int64_t> valid = {40, 1, 17};
        const std::vector<int32_t> table = {5, 2, 7, 1, 0, 0, 8, 3, 0};
        at::Tensor q = at::randn({B, 1, H, D}).transpose(1, 2);
        at::Tensor k32 = at::randn({blocks, H, block, D}).to(at::kBFloat16).to(at::kFloat);
        at::Tensor v32 = at::randn({blocks, H, block, D}).to(at::kBFloat16).to(at::kFloat);
        const at::Tensor k16 = k32.to(at::kBFloat16), v16 = v32.to(at::kBFloat16);
        const at::Tensor bias = at::randn({1, H, 1, width * block});
        QVERIFY(ops::paged_single_query_applies(q, k16));
        const at::Tensor from32 = ops::attend_single_query_paged(q, k32, v32, table, width, block, valid,
                                                                    width * block, bias, 0.125);
        const at::Tensor from16 = ops::attend_single_query_paged(q, k16, v16, table, width, block, valid,
                                                                    width * block, bias, 0.125);
        QVERIFY2(at::equal(from32, from16), "a bfloat16 cache must read as the float32 cache of its values");
        // And it is attention over what was stored: far from a float32 cache of the unrounded
        // values only by bfloat16's rounding.
        QVERIFY(!at::equal(from16, at::zeros_like(from16)));
    }

    // Grouped-query and multi-query attention: the kernel reads each key/value head once for its
    // query group and gives bit for bit what it gives over a cache holding every head repeated for
    // its queries (HF's repeat_kv), for float32 and bfloat16 caches, with a per-row bias.
    void paged_attention_groups_query_heads_data() {
        QTest::addColumn<qint64>("kv_heads");
        QTest::addColumn<bool>("bfloat16");
        QTest::newRow("GQA 6/2") << qint64(2) << false;
        QTest::newRow("MQA 6/1") << qint64(1) << false;
        QTest::newRow("GQA 6/3 bfloat16") << qint64(3) << true;
    }

    void paged_attention_groups_query_heads() {
        QFETCH(qint64, kv_heads);
        QFETCH(bool, bfloat16);
        c10::InferenceMode guard;
        const int64_t B = 3, H = 6, D = 16, block = 16, blocks = 9, width = 3, G = H / kv_heads;
        const std::vector<int64_t> valid = {40, 1, 17};
        const std::vector<int32_t> table = {5, 2, 7, 1, 0, 0, 8, 3, 0};
        at::Tensor q = at::randn({B, 1, H, D}).transpose(1, 2);
        at::Tensor k = at::randn({blocks, kv_heads, block, D}), v = at::randn({blocks, kv_heads, block, D});
        if (bfloat16) k = k.to(at::kBFloat16), v = v.to(at::kBFloat16);
        auto repeated = [&](const at::Tensor& t) {
            return t.unsqueeze(2).expand({blocks, kv_heads, G, block, D}).reshape({blocks, H, block, D}).contiguous();
        };
        const at::Tensor bias = length_mask(valid, width * block) + at::randn({B, H, 1, width * block});
        const at::Tensor grouped = ops::attend_single_query_paged(q, k, v, table, width, block, valid, width * block, bias, 0.25);
        const at::Tensor each = ops::attend_single_query_paged(q, repeated(k), repeated(v), table, width, block, valid,
                                                               width * block, bias, 0.25);
        QVERIFY2(at::equal(grouped, each), "grouped heads must read as their repeated heads");
        // And it is attention: the generic formula on the gathered, repeated operands.
        for (int64_t b = 0; b < B; ++b) {
            const int64_t n = valid[static_cast<size_t>(b)];
            std::vector<at::Tensor> ks, vs;
            for (int64_t j = 0; j * block < n; ++j) {
                ks.push_back(repeated(k)[table[static_cast<size_t>(b * width + j)]].to(at::kFloat));
                vs.push_back(repeated(v)[table[static_cast<size_t>(b * width + j)]].to(at::kFloat));
            }
            const at::Tensor kb = at::cat(ks, 1).narrow(1, 0, n), vb = at::cat(vs, 1).narrow(1, 0, n);  // [H, n, D]
            const at::Tensor scores = at::matmul(q[b], kb.transpose(-1, -2)) * 0.25 + bias[b].narrow(-1, 0, n);
            const at::Tensor expected = at::matmul(at::softmax(scores, -1), vb).reshape({H * D});
            QVERIFY(close(grouped[b][0], expected, 1e-5, 1e-5));
        }
    }

    void rms_norm_matches_t5_formula() {
        // T5LayerNorm: x * rsqrt(mean(x^2) + eps) * weight, for decode rows, prefill rows and a
        // strided view (which takes ATen's path).
        c10::InferenceMode guard;
        const double eps = 1e-6;
        at::Tensor w = at::rand({512}) + 0.5;
        const models::Norm norm(models::Norm::Kind::Rms, w, {}, eps);
        for (const at::Tensor& x : {at::randn({32, 1, 512}), at::randn({3, 37, 512}) * 30,
                                    at::randn({4, 1, 1024}).narrow(-1, 0, 512)}) {
            const at::Tensor expected = x * at::rsqrt(x.pow(2).mean(-1, true) + eps) * w;
            QVERIFY(close(norm.forward(x), expected, 1e-5, 1e-5));
        }
    }

    // torch.argmax(-1): the first maximal index on ties, the first NaN where a row has one.
    void argmax_rows_matches_torch_argmax() {
        c10::InferenceMode guard;
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        at::Tensor x = at::randint(0, 7, {40, 50265}).to(at::kFloat);  // few values: many ties
        x[1].fill_(-inf);
        x[2][300] = nan;
        x[2][9] = nan;
        x[3][0] = nan;
        x[4][50264] = 7.0f;
        x[5].fill_(3.0f);
        const at::Tensor expected = x.argmax(-1);
        for (int threads : {1, 2, 3}) {
            ops::set_pool_threads(threads);
            std::vector<int64_t> got(40);
            ops::argmax_rows(x.data_ptr<float>(), 40, 50265, 50265, got.data());
            for (int64_t i = 0; i < 40; ++i) QCOMPARE(got[static_cast<size_t>(i)], expected[i].item<int64_t>());
            std::vector<int64_t> one(1);  // a strided block of one column
            ops::argmax_rows(x.data_ptr<float>() + 7, 1, 1, 50265, one.data());
            QCOMPARE(one[0], int64_t{0});
        }
        ops::set_pool_threads(2);
        // Every length around the vector paths' lanes and tails (AVX2: 8 lanes, rows under 16
        // scalar), ties between lanes and with the tail, signed zeros, NaN and -inf in lanes and tails.
        for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 31, 33, 64, 100, 257}) {
            at::Tensor y = at::randint(0, 3, {12, n}).to(at::kFloat);
            y[0].fill_(-inf);
            y[1].fill_(0.0f);
            y[1][n - 1] = -0.0f;
            y[2][n - 1] = 9.0f;                  // the last value: a tail or the last lane
            y[3][n / 2] = nan;
            y[4][n - 1] = nan;
            y[5].fill_(-inf);
            y[5][n - 1] = -1.0f;
            y[6][n / 3] = 5.0f;
            y[6][n - 1] = 5.0f;                  // a tie: the first one wins
            y[7] = at::randn({n});
            y[8].fill_(1.0f);
            y[8][0] = -inf;
            const at::Tensor want = y.argmax(-1);
            std::vector<int64_t> got(12);
            ops::argmax_rows(y.data_ptr<float>(), 12, n, n, got.data());
            for (int64_t i = 0; i < 12; ++i)
                QVERIFY2(got[static_cast<size_t>(i)] == want[i].item<int64_t>(),
                         qPrintable(QString("length %1, row %2: %3, torch %4")
                                        .arg(n).arg(i).arg(got[static_cast<size_t>(i)]).arg(want[i].item<int64_t>())));
        }
    }

    // Keys and values reach the cache from the strided views the layers make of their fused
    // projection, exactly (float32) or rounded to nearest even (bfloat16), padding tokens skipped.
    void kv_writes_from_strided_views() {
        c10::InferenceMode guard;
        const int64_t B = 2, T = 21, H = 3, D = 8;
        for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
            auto pool = std::make_shared<models::KvPool>(models::CacheShape{1, H, D}, 8, at::TensorOptions().dtype(dtype),
                                                         false, at::kFloat);
            models::DecodeState state(pool);
            state.add_row();
            state.add_row();
            const std::vector<int64_t> added = {T, 13};
            const models::PagedStep step = state.begin_forward(added, T);
            const at::Tensor fused = at::randn({B, T, H, 3, D}) * 100;
            const at::Tensor k = fused.select(3, 1).transpose(1, 2), v = fused.select(3, 2).transpose(1, 2);
            QVERIFY(!k.is_contiguous());
            step.write(0, k, v);
            state.advance(added);
            const auto [keys, values] = state.begin_forward({0, 0}, 1).gather_self(0);
            const at::Tensor want_k = k.to(dtype).to(at::kFloat), want_v = v.to(dtype).to(at::kFloat);
            QVERIFY(at::equal(keys[0].narrow(1, 0, T), want_k[0]));
            QVERIFY(at::equal(values[0].narrow(1, 0, T), want_v[0]));
            QVERIFY(at::equal(keys[1].narrow(1, 0, 13), want_k[1].narrow(1, 0, 13)));
            QVERIFY(at::equal(values[1].narrow(1, 0, 13), want_v[1].narrow(1, 0, 13)));
        }
    }

    // ATen's operators in fixed chunks on our pool give what one ATen call on one thread gives, bit
    // for bit, whatever the pool's thread count, tails that are not whole vectors included.
    void aten_on_pool_equals_one_call() {
        c10::InferenceMode guard;
        at::set_num_threads(1);  // the reference: one call, one thread
        const at::Tensor w = at::rand({1000}) + 0.5, b = at::randn({1000});
        for (int64_t n : {int64_t{65536}, int64_t{65536 * 3 + 5}, int64_t{100000 + 63}}) {
            const at::Tensor x = at::randn({n}) * 4, y = at::randn({n});
            QVERIFY(ops::worth_sharing(x));
            for (int threads : {1, 2, 3}) {
                ops::set_pool_threads(threads);
                QVERIFY(at::equal(models::activate(models::Activation::GeluTanh, x), at::gelu(x, "tanh")));
                QVERIFY(at::equal(models::activate(models::Activation::GeluErf, x), at::gelu(x)));
                QVERIFY(at::equal(models::activate(models::Activation::Silu, x), at::silu(x)));
                QVERIFY(at::equal(models::activate(models::Activation::Relu, x), at::relu(x)));
                QVERIFY(at::equal(ops::add_on_pool(x, y), x + y));
            }
        }
        for (int64_t rows : {int64_t{70}, int64_t{333}}) {
            const at::Tensor x = at::randn({rows, 1, 1000}) * 3 + 1;
            const models::Norm norm(models::Norm::Kind::Layer, w, b, 1e-5);
            const at::Tensor expected = at::layer_norm(x, {1000}, w, b, 1e-5);
            for (int threads : {1, 2, 3}) {
                ops::set_pool_threads(threads);
                QVERIFY(at::equal(norm.forward(x), expected));
            }
        }
        set_compute_threads(2);
    }

    void single_query_attention_checks_lengths() {
        c10::InferenceMode guard;
        at::Tensor q = at::randn({2, 1, 1, 4}), k = at::randn({2, 1, 3, 4}), v = at::randn({2, 1, 3, 4});
        const std::vector<int64_t> one = {3};
        bool threw = false;
        try {
            ops::attend_single_query(q, k, v, {}, 1.0, &one);
        } catch (const c10::Error&) {
            threw = true;
        }
        QVERIFY2(threw, "a lengths vector for the wrong number of rows must be refused");
    }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
