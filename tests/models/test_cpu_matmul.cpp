// The packed CPU matmuls (ops/cpu_matmul.h) and their element-wise kernels (ops/quantize.h), each
// checked against the ATen computation that defines it: float32 against x W^T + b; bfloat16 against
// the same product of bfloat16-rounded operands (oneDNN rounds both, our panel kernels the weights);
// int8 against integer products of the quantized operands, rescaled (the scheme itself, computed
// independently), and loosely against float32; 4-bit against the product of the quantized
// activations and the weights it reads back. Run as is and under LORASCOPE_CPU_ISA (CMakeLists.txt),
// so that every backend and kernel the CPU can run is checked on any CI machine.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <functional>

#include "lorascope/runtime.h"
#include "ops/cpu_isa.h"
#include "ops/cpu_matmul.h"
#include "ops/quantize.h"
#include "quant_reference.h"

using namespace lorascope;
using ops::MatmulKind;

using test::dequantized_activations;
using test::quantize_asym_ref;
using test::quantize_ref;
using test::random_input;
using test::relative_error;
using test::rows_close;

namespace {

struct Shape {
    int64_t M, K, N;
};

// Row counts of decode steps and prefill, widths of the tiny and bench models, and output widths
// that are not multiples of oneDNN's blocks or that span several 4096-row packing blocks.
const Shape kShapes[] = {{1, 64, 1}, {3, 64, 100}, {32, 512, 1536}, {17, 777, 4096 + 17}, {100, 96, 9000}};

// x [M, K] (random_input's), W [N, K] and b [N], Gaussian.
struct Operands {
    at::Tensor x, w, b;
    Operands(const Shape& s, int64_t seed) : x(random_input(s.M, s.K, seed)), w(at::randn({s.N, s.K})), b(at::randn({s.N})) {}
};

// For every shape: `kind`'s product of fresh operands, handed to `check` with them.
void for_each_product(MatmulKind kind, int64_t seed,
                      const std::function<void(const Shape&, const Operands&, const ops::CpuMatmul&, const at::Tensor&)>& check) {
    c10::InferenceMode guard;
    for (const Shape& s : kShapes) {
        const Operands o(s, seed);
        ops::CpuMatmul mm(o.w, o.b, kind);
        check(s, o, mm, mm.forward(o.x));
    }
}

// Each element's error against |x_i| |w_j|, the scale of a dot product's rounding: a single
// element's relative error is unbounded where the product cancels.
double scaled_error(const at::Tensor& got, const Operands& o) {
    at::Tensor scale = at::outer(o.x.norm(2, 1), o.w.norm(2, 1)).clamp_min(1e-12);
    return ((got - at::linear(o.x, o.w, o.b)).abs() / scale).max().item<double>();
}

QString where(const Shape& s, const ops::CpuMatmul& mm) {
    return QString("%1 x %2 x %3 (%4)").arg(s.M).arg(s.K).arg(s.N).arg(mm.backend().c_str());
}

}  // namespace

class TestCpuMatmul : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        set_compute_threads(2);
        qInfo("instruction sets: %s", ops::cpu_isa_description().c_str());
    }

    void float32_equals_aten() {
        for_each_product(MatmulKind::Float32, 1, [](const Shape& s, const Operands& o, const ops::CpuMatmul& mm,
                                                    const at::Tensor& got) {
            QVERIFY2(rows_close(got, at::linear(o.x, o.w, o.b), 1e-5), qPrintable(where(s, mm)));
            ops::CpuMatmul no_bias(o.w, at::Tensor(), MatmulKind::Float32);
            QVERIFY(rows_close(no_bias.forward(o.x), at::matmul(o.x, o.w.t()), 1e-5));
        });
    }

    void bfloat16_equals_the_product_of_rounded_operands() {
        for_each_product(MatmulKind::Bfloat16, 2, [](const Shape& s, const Operands& o, const ops::CpuMatmul& mm,
                                                     const at::Tensor& got) {
            // bfloat16 products are exact in float32; only the summation order differs. oneDNN
            // rounds the activations to bfloat16 too, our panel kernels keep them float32.
            const bool onednn = mm.backend() == "onednn";
            at::Tensor xr = onednn ? o.x.to(at::kBFloat16).to(at::kDouble) : o.x.to(at::kDouble);
            at::Tensor want = at::linear(xr, o.w.to(at::kBFloat16).to(at::kDouble), o.b.to(at::kDouble));
            QVERIFY2(rows_close(got, want, 1e-5), qPrintable(where(s, mm)));
            QVERIFY(relative_error(got, at::linear(o.x, o.w, o.b)) < 1e-2);
        });
    }

    void int8_equals_the_integer_product_rescaled() {
        for_each_product(MatmulKind::Int8, 3, [](const Shape& s, const Operands& o, const ops::CpuMatmul& mm,
                                                 const at::Tensor& got) {
            auto [qw, sw] = quantize_ref(o.w, mm.int8_weight_max());
            // The dequantized operands' product, in double: (q_x s_x + min) . (q_w s_w).
            at::Tensor wd = qw.to(at::kDouble) * sw.to(at::kDouble);
            at::Tensor want = at::linear(dequantized_activations(o.x), wd, o.b.to(at::kDouble));
            QVERIFY2(rows_close(got, want, 1e-5), qPrintable(where(s, mm)));
            // And what the scheme costs against float32 on random Gaussian operands.
            const double err = scaled_error(got, o);
            QVERIFY2(err < 2e-2, qPrintable(where(s, mm) + QString(": relative error %1").arg(err)));
        });
    }

    // 4-bit: the product of the quantized activations and the weights as the layer reads them back
    // (their quantization is checked in test_panel_gemm), and what 4 bits cost against float32.
    void int4_equals_the_product_of_its_operands() {
        for_each_product(MatmulKind::Int4, 5, [](const Shape& s, const Operands& o, const ops::CpuMatmul& mm,
                                                 const at::Tensor& got) {
            at::Tensor wd = mm.rows(at::arange(s.N)).to(at::kDouble);
            at::Tensor want = at::linear(dequantized_activations(o.x), wd, o.b.to(at::kDouble));
            QVERIFY2(rows_close(got, want, 1e-5), qPrintable(where(s, mm)));
            const double err = scaled_error(got, o);
            QVERIFY2(err < 0.2, qPrintable(where(s, mm) + QString(": relative error %1").arg(err)));
            if (s.N >= 1000) QVERIFY(mm.bytes() * 6 < static_cast<int64_t>(o.w.nbytes()));  // ~4.5 bits a weight
        });
    }

    // One packed layout serves every row count. On a Xeon with AMX, oneDNN left to itself chose
    // other layouts for 1-4 and for 64+ rows of a 64 x 64 bfloat16 weight than for the 32 rows the
    // weight was packed for, and these products failed.
    void every_row_count_reads_the_packed_layout() {
        c10::InferenceMode guard;
        at::Tensor w = at::randn({64, 64}), b = at::randn({64});
        for (MatmulKind kind : {MatmulKind::Float32, MatmulKind::Bfloat16, MatmulKind::Int8, MatmulKind::Int4}) {
            ops::CpuMatmul mm(w, b, kind);
            for (int64_t M : {1, 2, 3, 4, 5, 8, 31, 32, 33, 64, 128, 300}) {
                at::Tensor x = random_input(M, 64, 4);
                at::Tensor got = mm.forward(x);
                const double err = relative_error(got, at::linear(x, w, b));
                QVERIFY2(err < (kind == MatmulKind::Int4 ? 0.15 : 2e-2), qPrintable(QString("%1, %2 rows: relative error %3")
                                                    .arg(ops::matmul_kind_name(kind)).arg(M).arg(err)));
            }
        }
    }

    void leading_dimensions_and_strided_inputs() {
        c10::InferenceMode guard;
        at::Tensor w = at::randn({300, 64}), b = at::randn({300});
        at::Tensor x = at::randn({2, 5, 128}).narrow(-1, 10, 64);  // rows 128 floats apart
        for (MatmulKind kind : {MatmulKind::Float32, MatmulKind::Bfloat16, MatmulKind::Int8, MatmulKind::Int4}) {
            ops::CpuMatmul mm(w, b, kind);
            at::Tensor got = mm.forward(x);
            QCOMPARE(got.sizes(), (at::IntArrayRef{2, 5, 300}));
            QVERIFY(at::equal(got, mm.forward(x.contiguous())));
            QVERIFY(relative_error(got, at::linear(x, w, b)) < (kind == MatmulKind::Int4 ? 0.15 : 3e-2));
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
        auto [qw, sw] = quantize_ref(w, int8.int8_weight_max());
        QVERIFY(at::allclose(int8.rows(ids), at::embedding(qw * sw, ids), 0, 1e-6));
        QVERIFY_THROWS_EXCEPTION(c10::Error, int8.rows(at::tensor({4196}, at::kLong)));
        QVERIFY(int8.bytes() < f32.bytes() / 2);  // K=48 is padded to oneDNN's int8 blocks
        // A 4-bit model's tables keep all 8 bits on every kernel (7 on the plain AVX2 one otherwise).
        ops::CpuMatmul full(w, at::Tensor(), MatmulKind::Int8, {}, /*full_int8=*/true);
        QCOMPARE(full.int8_weight_max(), 127);
        auto [qf, sf] = quantize_ref(w);
        QVERIFY(at::allclose(full.rows(ids), at::embedding(qf * sf, ids), 0, 1e-6));
        // 4-bit rows: a group scale (about the largest magnitude / 8) times an integer in [-8, 7],
        // within about a step of the weight (test_panel_gemm checks the quantization itself).
        ops::CpuMatmul int4(w, at::Tensor(), MatmulKind::Int4);
        at::Tensor r = int4.rows(ids), wr = at::embedding(w, ids);
        QVERIFY(((r - wr).abs() <= wr.abs().amax(-1, true) / 6.0 + 1e-6).all().item<bool>());
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

    // Every kind runs on every CPU (our kernels where oneDNN has none); each says which.
    void every_kind_runs_and_says_how() {
        for (MatmulKind kind : {MatmulKind::Float32, MatmulKind::Bfloat16, MatmulKind::Int8, MatmulKind::Int4}) {
            const std::string how = ops::cpu_matmul_description(kind);
            QVERIFY2(how.find("onednn") != std::string::npos || how.find("oneDNN") != std::string::npos ||
                         how.find("kernels") != std::string::npos,
                     how.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestCpuMatmul)
#include "test_cpu_matmul.moc"
