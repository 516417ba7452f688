// Our panel kernels (ops/panel_gemm.h), every instruction-set build this process may run, on one
// packed weight each: against ATen references computed independently (int8: the integer products of
// the quantized operands, rescaled; bfloat16: float32 activations times bfloat16-rounded weights, in
// double; float32: the operands in double; 4-bit: the quantized activations times the weights as
// packed, and the 4-bit quantization itself against GGUF's Q4_0 rule), and every kernel bit-identical to the portable one. The CTest
// variants under LORASCOPE_CPU_ISA (CMakeLists.txt) check that the cap hides the kernels above it.
#include <QtTest>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Half.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "lorascope/runtime.h"
#include "ops/cpu_isa.h"
#include "ops/panel_gemm.h"
#include "ops/quantize.h"
#include "quant_reference.h"

using namespace lorascope;
using namespace lorascope::ops::panel;
using test::random_input;
using test::rows_close;

namespace {

const Kernel kKernels[] = {Kernel::Scalar, Kernel::Avx2, Kernel::AvxVnni, Kernel::Avx512, Kernel::Avx512Vnni, Kernel::Amx};
const Format kFormats[] = {Format::Int8, Format::Bf16, Format::Int4, Format::F32};

const char* format_name(Format f) {
    switch (f) {
        case Format::Int8: return "int8";
        case Format::Bf16: return "bfloat16";
        case Format::Int4: return "int4";
        case Format::F32: break;
    }
    return "float32";
}

struct Packed {
    Layout layout;
    at::Tensor bytes, scale, offset, bias;  // column arrays and bias: panels * 16 floats, zero past N
};

Packed pack(Format format, const at::Tensor& w, const at::Tensor& b, int int8_max = 127) {
    Packed p;
    p.layout = make_layout(format, w.size(1), w.size(0));
    p.layout.int8_max = int8_max;
    const int64_t padded = p.layout.panels * kCols;
    p.bytes = at::zeros({p.layout.bytes()}, at::kByte);
    p.scale = at::zeros({padded});
    p.offset = at::zeros({padded});
    p.bias = at::zeros({padded});
    p.bias.narrow(0, 0, w.size(0)).copy_(b);
    for (int64_t n0 = 0; n0 < w.size(0); n0 += 4096) {  // blocks, as CpuMatmul packs them
        const int64_t c = std::min<int64_t>(4096, w.size(0) - n0);
        at::Tensor block = w.narrow(0, n0, c).contiguous();
        pack_rows(p.layout, block.data_ptr<float>(), w.size(1), n0, c, p.bytes.data_ptr<uint8_t>(),
                  {p.scale.data_ptr<float>(), p.offset.data_ptr<float>()});
    }
    return p;
}

// y = x W^T + b through `kernel`, the activations prepared as CpuMatmul prepares them.
at::Tensor run(const Packed& p, Kernel kernel, const at::Tensor& x) {
    const Layout& l = p.layout;
    const int64_t M = x.size(0), ld = l.k_padded;
    std::vector<uint8_t> q(static_cast<size_t>(M * ld), 0), centred(q.size()), magnitude(q.size());
    std::vector<float> scale(static_cast<size_t>(M)), min(static_cast<size_t>(M));
    ops::quantize_rows_u8(x.data_ptr<float>(), M, l.K, l.K, q.data(), scale.data(), min.data(), ld);
    prepare_int8_planes(q.data(), M * ld, centred.data(), magnitude.data());
    at::Tensor y = at::full({M, l.N}, -1.0f);
    Product pr;
    pr.layout = &l;
    pr.packed = p.bytes.data_ptr<uint8_t>();
    pr.column_scale = p.scale.data_ptr<float>();
    pr.column_offset = p.offset.data_ptr<float>();
    pr.bias = p.bias.data_ptr<float>();
    pr.M = M;
    pr.x = x.data_ptr<float>();
    pr.ldx = l.K;
    // The planes only where the kernel wants them, as CpuMatmul does: a kernel that read them
    // otherwise would fault on null.
    const bool planes = kernel_wants_planes(l, kernel);
    pr.xq = {q.data(), planes ? centred.data() : nullptr, planes ? magnitude.data() : nullptr, ld, scale.data(), min.data()};
    pr.y = y.data_ptr<float>();
    pr.ldy = l.N;
    multiply(pr, kernel, 0, l.panels);
    return y;
}

// What each format's product is, from ATen operators.
at::Tensor reference(Format format, const Packed& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    const at::Tensor bd = b.to(at::kDouble);
    if (format == Format::Bf16) return at::linear(x.to(at::kDouble), w.to(at::kBFloat16).to(at::kDouble), bd);
    if (format == Format::F32) return at::linear(x.to(at::kDouble), w.to(at::kDouble), bd);
    at::Tensor wd;
    if (format == Format::Int8) {
        auto [qw, sw] = test::quantize_ref(w, p.layout.int8_max);
        wd = qw.to(at::kDouble) * sw.to(at::kDouble);
    } else {  // 4-bit: the weights as packed (their quantization: int4_groups_are_as_close_as_q4_0)
        wd = at::empty(w.sizes(), at::kFloat);
        for (int64_t n = 0; n < w.size(0); ++n)
            unpack_row(p.layout, p.bytes.data_ptr<uint8_t>(), nullptr, n, wd[n].data_ptr<float>());
        wd = wd.to(at::kDouble);
    }
    return at::linear(test::dequantized_activations(x), wd, bd);
}

struct Shape {
    int64_t M, K, N;
};
// Batch 1 and 2 (four panels at a time), tile remainders, K and N off every step and panel size,
// several packing blocks, the bench models' widths.
const Shape kShapes[] = {{1, 64, 1},   {1, 100, 300}, {2, 64, 200},   {3, 65, 100},  {5, 33, 40},
                         {9, 96, 64},  {1, 1024, 4096}, {17, 777, 4113}, {32, 512, 1536}};

}  // namespace

class TestPanelGemm : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        set_compute_threads(2);
        qInfo("instruction sets: %s", ops::cpu_isa_description().c_str());
    }

    void every_kernel_matches_the_reference_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<int>("int8_max");
        for (Format f : kFormats) QTest::newRow(format_name(f)) << static_cast<int>(f) << 127;
        // What the plain AVX2 kernel packs (int8_weight_max): every kernel reads it the same.
        QTest::newRow("int8, 7-bit weights") << static_cast<int>(Format::Int8) << 63;
    }
    void every_kernel_matches_the_reference() {
        QFETCH(int, format);
        QFETCH(int, int8_max);
        const auto f = static_cast<Format>(format);
        c10::InferenceMode guard;
        for (const Shape& s : kShapes) {
            at::Tensor x = random_input(s.M, s.K, s.N), w = at::randn({s.N, s.K}), b = at::randn({s.N});
            const Packed p = pack(f, w, b, int8_max);
            const at::Tensor portable = run(p, Kernel::Scalar, x);
            const QString where = QString("%1 x %2 x %3").arg(s.M).arg(s.K).arg(s.N);
            QVERIFY2(rows_close(portable, reference(f, p, x, w, b), 1e-5), qPrintable(where));
            for (Kernel k : kKernels) {
                if (k == Kernel::Scalar || !kernel_available(f, k)) continue;
                QVERIFY2(at::equal(run(p, k, x), portable), qPrintable(where + " " + kernel_name(k)));
            }
        }
    }

    // The cap of LORASCOPE_CPU_ISA reaches the kernels: none above it is offered.
    void the_cap_hides_the_kernels_above_it() {
        const char* forced = std::getenv("LORASCOPE_CPU_ISA");
        const ops::CpuIsa level = ops::cpu_isa();
        if (forced && *forced) QVERIFY(level <= *ops::parse_cpu_isa(forced));
        for (Format f : kFormats) {
            QVERIFY(kernel_available(f, Kernel::Scalar));
            QCOMPARE(kernel_available(f, Kernel::Avx2), level >= ops::CpuIsa::Avx2);
            if (level < ops::CpuIsa::Avx512) QVERIFY(!kernel_available(f, Kernel::Avx512));
            if (level < ops::CpuIsa::Avx2Vnni) QVERIFY(!kernel_available(f, Kernel::AvxVnni));
            if (level < ops::CpuIsa::Avx512Amx) QVERIFY(!kernel_available(f, Kernel::Amx));
            if (level == ops::CpuIsa::Scalar) QCOMPARE(best_kernel(f), Kernel::Scalar);
        }
        // int8 packs 7-bit weights exactly where its products run the plain AVX2 kernel.
        QCOMPARE(int8_weight_max(Kernel::Avx2), 63);
        QCOMPARE(int8_weight_max(Kernel::Avx512), 63);   // no AVX-512 int8 kernel without VNNI
        for (Kernel k : {Kernel::Scalar, Kernel::AvxVnni, Kernel::Avx512Vnni, Kernel::Amx}) QCOMPARE(int8_weight_max(k), 127);
        const bool vnni = kernel_available(Format::Int8, Kernel::AvxVnni) || kernel_available(Format::Int8, Kernel::Avx512Vnni);
        QCOMPARE(int8_weight_max(best_kernel(Format::Int8)), kernel_available(Format::Int8, Kernel::Avx2) && !vnni ? 63 : 127);
    }

    // Each group of 32 (and a partial last group) is at least as close to the weights as GGUF's
    // Q4_0 rule (the value of largest magnitude at -8, a float16 scale) would put it, computed here.
    void int4_groups_are_as_close_as_q4_0() {
        c10::InferenceMode guard;
        at::manual_seed(11);
        const int64_t N = 40, K = 70;  // groups of 32, 32 and 6
        at::Tensor w = at::randn({N, K});
        w[3].zero_();
        w[5].narrow(0, 0, 32).mul_(1e-6);  // a tiny group: float16 subnormal scales
        const Packed p = pack(Format::Int4, w, at::zeros({N}));
        for (int64_t n = 0; n < N; ++n) {
            at::Tensor got = at::empty({K});
            unpack_row(p.layout, p.bytes.data_ptr<uint8_t>(), nullptr, n, got.data_ptr<float>());
            for (int64_t g0 = 0; g0 < K; g0 += kGroup) {
                const int64_t len = std::min(kGroup, K - g0);
                at::Tensor wg = w[n].narrow(0, g0, len), gg = got.narrow(0, g0, len);
                const at::Tensor extreme = wg.index({wg.abs().argmax()});
                const at::Tensor d = (extreme / -8.0).to(at::kHalf).to(at::kFloat);
                const at::Tensor inv = at::where(d != 0, 1.0 / d, at::zeros_like(d));
                const at::Tensor q0 = at::round(wg * inv).clamp(-8, 7);
                const double q4_0 = (wg - q0 * d).pow(2).sum().item<double>();
                const double ours = (wg - gg).pow(2).sum().item<double>();
                QVERIFY2(ours <= q4_0 * (1 + 1e-3) + 1e-20,
                         qPrintable(QString("row %1 group at %2: %3 > Q4_0's %4").arg(n).arg(g0).arg(ours).arg(q4_0)));
            }
        }
    }

    void half_conversions_match_aten() {
        at::Tensor all = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kHalf).to(at::kFloat);
        for (int h = 0; h < 65536; ++h) {
            const float want = all[h].item<float>(), got = from_half(static_cast<uint16_t>(h));
            QVERIFY2(std::memcmp(&want, &got, sizeof got) == 0 || (std::isnan(want) && std::isnan(got)),
                     qPrintable(QString::number(h)));
        }
        at::manual_seed(12);
        at::Tensor x = at::cat({at::randn({2000}), at::randn({2000}) * 1e-6, at::randn({500}) * 1e5,
                                at::tensor({0.0f, -0.0f, 65504.0f, 65519.9f, 65520.0f, 5.96e-8f, 2.98e-8f, 1e-10f})});
        at::Tensor want = x.to(at::kHalf).view(at::kShort);
        for (int64_t i = 0; i < x.size(0); ++i)
            QCOMPARE(static_cast<int16_t>(to_half(x[i].item<float>())), want[i].item<int16_t>());
    }

    void planes_are_the_centred_bytes() {
        std::vector<uint8_t> q(256), centred(256), magnitude(256);
        for (int v = 0; v < 256; ++v) q[static_cast<size_t>(v)] = static_cast<uint8_t>(v);
        prepare_int8_planes(q.data(), 256, centred.data(), magnitude.data());
        for (int v = 0; v < 256; ++v) {
            QCOMPARE(static_cast<int>(static_cast<int8_t>(centred[static_cast<size_t>(v)])), v - 128);
            QCOMPARE(static_cast<int>(magnitude[static_cast<size_t>(v)]), std::abs(v - 128));
        }
    }
};

QTEST_GUILESS_MAIN(TestPanelGemm)
#include "test_panel_gemm.moc"
