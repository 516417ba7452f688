// The packed CPU matmuls (ops/cpu_matmul.h) and their element-wise kernels (ops/quantize.h), each
// checked against the ATen computation that defines it: float32 against x W^T + b; bfloat16 against
// the same product of bfloat16-rounded operands; int8 against integer products of the quantized
// operands, rescaled (the scheme itself, computed independently), and loosely against float32.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "lorascope/runtime.h"
#include "ops/cpu_matmul.h"
#include "ops/quantize.h"

using namespace lorascope;
using ops::MatmulKind;

namespace {

// Reference asymmetric per-row quantization of activations: (q as float in [0, 255], scale, min).
std::tuple<at::Tensor, at::Tensor, at::Tensor> quantize_asym_ref(const at::Tensor& x) {
    at::Tensor mn = x.amin(1, /*keepdim=*/true), range = x.amax(1, true) - mn;
    at::Tensor scale = at::where(range > 0, range / 255.0, at::ones_like(range));
    at::Tensor inv = at::where(range > 0, 255.0 / range, at::zeros_like(range));
    return {at::round((x - mn) * inv).clamp(0, 255), scale, mn};
}

// Reference per-row symmetric int8 quantization of weights: (q as float, scale [rows, 1]).
std::pair<at::Tensor, at::Tensor> quantize_ref(const at::Tensor& x) {
    at::Tensor absmax = x.abs().amax(1, /*keepdim=*/true);
    at::Tensor scale = at::where(absmax > 0, absmax / 127.0, at::ones_like(absmax));
    at::Tensor inv = at::where(absmax > 0, 127.0 / absmax, at::zeros_like(absmax));
    return {at::round(x * inv).clamp(-127, 127), scale};  // at::round rounds half to even
}

at::Tensor random_input(int64_t M, int64_t K, int64_t seed) {
    at::manual_seed(seed);
    at::Tensor x = at::randn({M, K});
    if (M > 2) x[1].zero_();          // an all-zero row (scale 1, every byte 128)
    if (M > 2) x[2].mul_(1000.0);     // a row far larger than the others
    return x;
}

// Each row within `tol` of the row's largest magnitude: products of large rows cancel, so an
// element-wise relative tolerance would demand more than float32 summation gives.
bool rows_close(const at::Tensor& got, const at::Tensor& want, double tol) {
    if (got.sizes() != want.sizes()) return false;
    if (got.numel() == 0) return true;
    at::Tensor g = got.reshape({-1, got.size(-1)}).to(at::kDouble), w = want.reshape({-1, want.size(-1)}).to(at::kDouble);
    at::Tensor scale = w.abs().amax(1).clamp_min(1e-12);
    return ((g - w).abs().amax(1) / scale).max().item<double>() <= tol;
}

double relative_error(const at::Tensor& got, const at::Tensor& want) {
    return (got - want).norm().item<double>() / std::max(want.norm().item<double>(), 1e-12);
}

struct Shape {
    int64_t M, K, N;
};

// Row counts of decode steps and prefill, widths of the tiny and bench models, and output widths
// that are not multiples of oneDNN's blocks or that span several 4096-row packing blocks.
const Shape kShapes[] = {{1, 64, 1}, {3, 64, 100}, {32, 512, 1536}, {17, 777, 4096 + 17}, {100, 96, 9000}};

}  // namespace

class TestCpuMatmul : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        set_compute_threads(2);
        for (MatmulKind kind : {MatmulKind::Float32, MatmulKind::Bfloat16, MatmulKind::Int8}) {
            std::string why;
            if (!ops::cpu_matmul_available(kind, &why))
                QSKIP(qPrintable(QString("%1 is not available here: %2")
                                     .arg(ops::matmul_kind_name(kind), QString::fromStdString(why))));
        }
    }

    void float32_equals_aten() {
        c10::InferenceMode guard;
        for (const Shape& s : kShapes) {
            at::Tensor x = random_input(s.M, s.K, 1), w = at::randn({s.N, s.K}), b = at::randn({s.N});
            ops::CpuMatmul mm(w, b, MatmulKind::Float32);
            at::Tensor want = at::linear(x, w, b);
            QVERIFY2(rows_close(mm.forward(x), want, 1e-5), qPrintable(QString("N=%1").arg(s.N)));
            ops::CpuMatmul no_bias(w, at::Tensor(), MatmulKind::Float32);
            QVERIFY(rows_close(no_bias.forward(x), at::matmul(x, w.t()), 1e-5));
        }
    }

    void bfloat16_equals_the_product_of_rounded_operands() {
        c10::InferenceMode guard;
        for (const Shape& s : kShapes) {
            at::Tensor x = random_input(s.M, s.K, 2), w = at::randn({s.N, s.K}), b = at::randn({s.N});
            ops::CpuMatmul mm(w, b, MatmulKind::Bfloat16);
            at::Tensor got = mm.forward(x);
            // bfloat16 products are exact in float32; only the summation order differs.
            at::Tensor want = at::linear(x.to(at::kBFloat16).to(at::kFloat), w.to(at::kBFloat16).to(at::kFloat), b);
            QVERIFY2(rows_close(got, want, 1e-5), qPrintable(QString("N=%1").arg(s.N)));
            QVERIFY(relative_error(got, at::linear(x, w, b)) < 1e-2);
        }
    }

    void int8_equals_the_integer_product_rescaled() {
        c10::InferenceMode guard;
        for (const Shape& s : kShapes) {
            at::Tensor x = random_input(s.M, s.K, 3), w = at::randn({s.N, s.K}), b = at::randn({s.N});
            ops::CpuMatmul mm(w, b, MatmulKind::Int8);
            at::Tensor got = mm.forward(x);
            auto [qx, sx, mx] = quantize_asym_ref(x);
            auto [qw, sw] = quantize_ref(w);
            // The dequantized operands' product, in double: (q_x s_x + min) . (q_w s_w).
            at::Tensor xd = qx.to(at::kDouble) * sx.to(at::kDouble) + mx.to(at::kDouble);
            at::Tensor wd = qw.to(at::kDouble) * sw.to(at::kDouble);
            at::Tensor want = (at::matmul(xd, wd.t()) + b.to(at::kDouble)).to(at::kFloat);
            QVERIFY2(rows_close(got, want, 1e-5), qPrintable(QString("N=%1").arg(s.N)));
            // And what the scheme costs against float32 on random Gaussian operands.
            // Each element's error against |x_i| |w_j|, the scale of a dot product's rounding: a
            // single element's relative error is unbounded where the product cancels.
            at::Tensor scale = at::outer(x.norm(2, 1), w.norm(2, 1)).clamp_min(1e-12);
            const double err = ((got - at::linear(x, w, b)).abs() / scale).max().item<double>();
            QVERIFY2(err < 2e-2, qPrintable(QString("N=%1 K=%2 relative error %3").arg(s.N).arg(s.K).arg(err)));
        }
    }

    // One packed layout serves every row count. On a Xeon with AMX, oneDNN left to itself chose
    // other layouts for 1-4 and for 64+ rows of a 64 x 64 bfloat16 weight than for the 32 rows the
    // weight was packed for, and these products failed.
    void every_row_count_reads_the_packed_layout() {
        c10::InferenceMode guard;
        at::Tensor w = at::randn({64, 64}), b = at::randn({64});
        for (MatmulKind kind : {MatmulKind::Float32, MatmulKind::Bfloat16, MatmulKind::Int8}) {
            ops::CpuMatmul mm(w, b, kind);
            for (int64_t M : {1, 2, 3, 4, 5, 8, 31, 32, 33, 64, 128, 300}) {
                at::Tensor x = random_input(M, 64, 4);
                at::Tensor got = mm.forward(x);
                const double err = relative_error(got, at::linear(x, w, b));
                QVERIFY2(err < 2e-2, qPrintable(QString("%1, %2 rows: relative error %3")
                                                    .arg(ops::matmul_kind_name(kind)).arg(M).arg(err)));
            }
        }
    }

    void leading_dimensions_and_strided_inputs() {
        c10::InferenceMode guard;
        at::Tensor w = at::randn({300, 64}), b = at::randn({300});
        at::Tensor x = at::randn({2, 5, 128}).narrow(-1, 10, 64);  // rows 128 floats apart
        for (MatmulKind kind : {MatmulKind::Float32, MatmulKind::Bfloat16, MatmulKind::Int8}) {
            ops::CpuMatmul mm(w, b, kind);
            at::Tensor got = mm.forward(x);
            QCOMPARE(got.sizes(), (at::IntArrayRef{2, 5, 300}));
            QVERIFY(at::equal(got, mm.forward(x.contiguous())));
            QVERIFY(relative_error(got, at::linear(x, w, b)) < 3e-2);
            QCOMPARE(mm.forward(at::zeros({0, 64})).sizes(), (at::IntArrayRef{0, 300}));
        }
    }

    void rows_read_back_the_packed_weight() {
        c10::InferenceMode guard;
        at::Tensor w = at::randn({4096 + 100, 48});
        at::Tensor ids = at::tensor({0, 5, 4095, 4096, 4195, 5}, at::kLong).view({2, 3});
        ops::CpuMatmul f32(w, at::Tensor(), MatmulKind::Float32);
        QVERIFY(at::equal(f32.rows(ids), at::embedding(w, ids)));
        ops::CpuMatmul bf16(w, at::Tensor(), MatmulKind::Bfloat16);
        QVERIFY(at::equal(bf16.rows(ids), at::embedding(w.to(at::kBFloat16).to(at::kFloat), ids)));
        ops::CpuMatmul int8(w, at::Tensor(), MatmulKind::Int8);
        auto [qw, sw] = quantize_ref(w);
        QVERIFY(at::allclose(int8.rows(ids), at::embedding(qw * sw, ids), 0, 1e-6));
        QVERIFY_THROWS_EXCEPTION(c10::Error, int8.rows(at::tensor({4196}, at::kLong)));
        QVERIFY(int8.bytes() < f32.bytes() / 2);  // K=48 is padded to oneDNN's int8 blocks
    }

    void quantize_rounds_half_to_even_like_aten() {
        // Row [0, 255] makes the scale 1 and the offset 0, so k + 0.5 lands exactly halfway.
        const std::vector<float> row = {0.0f, 255.0f, 0.5f, 1.5f, 2.5f, 126.5f, 3.49f, 100.25f,
                                        7.5f, 8.5f, 9.5f, 10.5f, 11.5f, 12.5f, 254.5f, 13.0f, 200.5f};  // 17: a vector and a tail
        std::vector<uint8_t> q(row.size());
        float scale = 0, mn = -1;
        ops::quantize_rows_u8(row.data(), 1, static_cast<int64_t>(row.size()), static_cast<int64_t>(row.size()),
                              q.data(), &scale, &mn);
        QCOMPARE(scale, 1.0f);
        QCOMPARE(mn, 0.0f);
        auto [want, s, m] = quantize_asym_ref(at::tensor(row).view({1, -1}));
        for (size_t k = 0; k < row.size(); ++k)
            QCOMPARE(static_cast<int>(q[k]), static_cast<int>(want[0][static_cast<int64_t>(k)].item<float>()));
        // A constant row: scale 1, every code 0, the value carried by the minimum.
        const std::vector<float> flat(20, -3.25f);
        q.resize(flat.size());
        ops::quantize_rows_u8(flat.data(), 1, 20, 20, q.data(), &scale, &mn);
        QCOMPARE(scale, 1.0f);
        QCOMPARE(mn, -3.25f);
        QCOMPARE(static_cast<int>(q[0]), 0);
    }

    void bf16_conversion_rounds_to_nearest_even_like_aten() {
        at::manual_seed(4);
        at::Tensor x = at::randn({3, 37});
        x[0][0] = 1.0f + 1.0f / 256.0f;  // exactly halfway between two bfloat16 values
        std::vector<uint16_t> out(3 * 37);
        ops::to_bf16_rows(x.data_ptr<float>(), 3, 37, 37, out.data());
        at::Tensor want = x.to(at::kBFloat16).view(at::kShort);
        for (int64_t i = 0; i < 3 * 37; ++i)
            QCOMPARE(static_cast<int16_t>(out[static_cast<size_t>(i)]), want.view({-1})[i].item<int16_t>());
    }

    void unavailable_kinds_say_why() {
        std::string why;
        if (ops::cpu_matmul_available(MatmulKind::Int8, &why)) QVERIFY(why.empty());
        else QVERIFY(why.find("VNNI") != std::string::npos || why.find("oneDNN") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestCpuMatmul)
#include "test_cpu_matmul.moc"
