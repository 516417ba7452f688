// The CPU kernel of LoRA deltas (adapters/lora_kernels.h), for every instruction set this CPU has:
// each position's result is bit for bit the one it gets alone, whether it came with a few positions
// (the streaming loop of decoding steps) or many (the blocked loop of prefill), and it is the
// float64 product within float32 rounding. Shapes include sizes that are not multiples of any
// vector width, so that every tail loop runs. And the block big adapters' factors live in: aligned
// for huge pages, advised for them, and unmapped when let go.
#include <QtTest>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "adapters/lora_kernels.h"
#include "runtime/allocator_policy.h"

using namespace lorascope::adapters;

namespace {

struct Case {
    int64_t r, in, out;
};

struct Data {
    std::vector<float> a, bt, x, y0;
};

Data make_data(const Case& c, int64_t positions, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    Data d;
    auto fill = [&](std::vector<float>& v, size_t n) {
        v.resize(n);
        for (float& f : v) f = u(rng);
    };
    fill(d.a, static_cast<size_t>(c.r * c.in));
    fill(d.bt, static_cast<size_t>(c.r * c.out));
    fill(d.x, static_cast<size_t>(positions * c.in));
    fill(d.y0, static_cast<size_t>(positions * c.out));
    return d;
}

// y0 + BT^T (A x) for positions [first, first + n), by `isa`, one call.
std::vector<float> run(LoraIsa isa, const Case& c, const Data& d, int64_t first, int64_t n) {
    std::vector<float> y(d.y0.begin() + first * c.out, d.y0.begin() + (first + n) * c.out);
    std::vector<const float*> xs;
    std::vector<float*> ys;
    for (int64_t i = 0; i < n; ++i) {
        xs.push_back(d.x.data() + (first + i) * c.in);
        ys.push_back(y.data() + i * c.out);
    }
    std::vector<float> h(static_cast<size_t>(n * c.r));
    lora_positions(isa, d.a.data(), d.bt.data(), c.r, c.in, c.out, xs.data(), ys.data(), n, h.data());
    return y;
}

// The VmFlags of the mapping holding `p` in /proc/self/smaps; "" when no mapping holds it.
std::string vm_flags_at(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<uintptr_t>(p);
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        uintptr_t lo = 0, hi = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
            inside = lo <= at && at < hi;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0) return line;
    }
    return {};
}

QString isa_name(LoraIsa isa) {
    return isa == LoraIsa::Avx512 ? "avx512" : isa == LoraIsa::Avx2 ? "avx2" : "plain";
}

}  // namespace

class TestLoraKernels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void each_position_is_the_one_it_gets_alone_and_the_exact_product() {
        const std::vector<Case> cases = {{1, 7, 5}, {3, 37, 45}, {8, 512, 512}, {17, 100, 260}, {64, 512, 1536}};
        const std::vector<int64_t> sizes = {1, 2, 3, 5, 8, 9, 13, 40};
        const int64_t most = 40;
        std::vector<LoraIsa> isas = {LoraIsa::Plain};
        if (lora_best_isa() >= LoraIsa::Avx2) isas.push_back(LoraIsa::Avx2);
        if (lora_best_isa() >= LoraIsa::Avx512) isas.push_back(LoraIsa::Avx512);
        qInfo("instruction sets: %d (best %s)", static_cast<int>(isas.size()), qPrintable(isa_name(lora_best_isa())));
        for (LoraIsa isa : isas)
            for (const Case& c : cases) {
                const QString label = QString("%1 r=%2 in=%3 out=%4").arg(isa_name(isa)).arg(c.r).arg(c.in).arg(c.out);
                const Data d = make_data(c, most, static_cast<uint32_t>(c.r * 1000 + c.in));
                std::vector<std::vector<float>> alone;
                for (int64_t p = 0; p < most; ++p) alone.push_back(run(isa, c, d, p, 1));
                // Alone against float64: the chains of float32 fused operations stay within rounding.
                for (int64_t p = 0; p < most; ++p) {
                    std::vector<double> h(static_cast<size_t>(c.r), 0.0);
                    for (int64_t k = 0; k < c.r; ++k)
                        for (int64_t j = 0; j < c.in; ++j) h[k] += double(d.a[k * c.in + j]) * d.x[p * c.in + j];
                    for (int64_t o = 0; o < c.out; ++o) {
                        double ref = d.y0[p * c.out + o], scale = std::abs(ref);
                        for (int64_t k = 0; k < c.r; ++k) {
                            ref += h[k] * d.bt[k * c.out + o];
                            scale += std::abs(h[k] * d.bt[k * c.out + o]);
                        }
                        const double got = alone[p][o];
                        if (std::abs(got - ref) > 1e-5 * (scale + 1.0) * std::sqrt(double(c.in)))
                            QFAIL(qPrintable(QString("%1 position %2 output %3: %4, float64 gives %5")
                                                 .arg(label).arg(p).arg(o).arg(got).arg(ref)));
                    }
                }
                // In company: every n, from every start, bit for bit the same as alone.
                for (int64_t n : sizes)
                    for (int64_t first = 0; first + n <= most; first += n) {
                        const std::vector<float> y = run(isa, c, d, first, n);
                        for (int64_t i = 0; i < n; ++i)
                            if (std::memcmp(y.data() + i * c.out, alone[first + i].data(), sizeof(float) * c.out) != 0)
                                QFAIL(qPrintable(QString("%1: position %2 among %3 differs from itself alone")
                                                     .arg(label).arg(first + i).arg(n)));
                    }
            }
    }

    void the_huge_page_block_is_aligned_zeroed_advised_and_unmapped() {
        const size_t bytes = 5 * (size_t{1} << 20) + 123;
        std::shared_ptr<void> block = lorascope::runtime::allocate_huge_page_block(bytes);
        auto* p = static_cast<unsigned char*>(block.get());
        QCOMPARE(reinterpret_cast<uintptr_t>(p) % lorascope::runtime::kHugePageBytes, uintptr_t{0});
        for (size_t i = 0; i < bytes; i += 4093) QCOMPARE(int(p[i]), 0);
        std::memset(p, 0xA5, bytes);
        QCOMPARE(int(p[bytes - 1]), 0xA5);
#if defined(__linux__)
        const std::string flags = vm_flags_at(p);
        QVERIFY2(!flags.empty(), "no mapping holds the block");
        // A kernel built without transparent huge pages refuses the advice; the block is then
        // ordinary memory, which is what allocate_huge_page_block promises.
        if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"))
            QVERIFY2(flags.find(" hg") != std::string::npos,
                     qPrintable(QString("not advised for huge pages: ") + flags.c_str()));
        block.reset();
        QVERIFY2(vm_flags_at(p).empty(), "the block is still mapped after its last owner let go");
#endif
    }

    void isa_beyond_the_cpu_falls_back_to_what_it_has() {
        const Case c{5, 33, 17};
        const Data d = make_data(c, 3, 7);
        const std::vector<float> asked = run(LoraIsa::Avx512, c, d, 0, 3);
        const std::vector<float> best = run(lora_best_isa(), c, d, 0, 3);
        QVERIFY(std::memcmp(asked.data(), best.data(), sizeof(float) * asked.size()) == 0);
    }
};

QTEST_APPLESS_MAIN(TestLoraKernels)
#include "test_lora_kernels.moc"
