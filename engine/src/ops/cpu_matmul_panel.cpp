// CpuMatmul's panel backend: our own kernels (ops/panel_gemm.h) for float32, int8, bfloat16 and
// 4-bit weights, split over the pool's threads (ops/thread_pool.h) a range of panels at a time.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/matmul_backend.h"
#include "ops/panel_gemm.h"
#include "ops/quantize.h"
#include "ops/thread_pool.h"

namespace lorascope::ops {

panel::Format panel_format(MatmulKind kind) {
    switch (kind) {
        case MatmulKind::Int8: return panel::Format::Int8;
        case MatmulKind::Bfloat16: return panel::Format::Bf16;
        case MatmulKind::Int4: return panel::Format::Int4;
        case MatmulKind::Float32: break;
    }
    return panel::Format::F32;
}

namespace {

bool quantized(panel::Format format) { return format == panel::Format::Int8 || format == panel::Format::Int4; }

float* data(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

class PanelMatmul : public MatmulBackend {
public:
    PanelMatmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind, const CpuMatmul::RowsRead& rows_read,
                bool full_int8)
        : layout_(panel::make_layout(panel_format(kind), weight.size(1), weight.size(0))),
          kernel_(panel::best_kernel(layout_.format)) {
        if (layout_.format == panel::Format::Int8) layout_.int8_max = full_int8 ? 127 : panel::int8_weight_max(kernel_);
        const int64_t padded = layout_.panels * panel::kCols;  // vector loads of the last panel's columns
        packed_ = at::zeros({layout_.bytes()}, at::kByte);
        if (layout_.format == panel::Format::Int8) scale_ = at::zeros({padded}, at::kFloat);
        if (quantized(layout_.format)) offset_ = at::zeros({padded}, at::kFloat);
        if (bias.defined()) {
            bias_ = at::zeros({padded}, at::kFloat);
            bias_.narrow(0, 0, layout_.N).copy_(bias.to(at::kFloat));
        }
        for (int64_t n0 = 0; n0 < layout_.N; n0 += kPackRows) {
            const int64_t c = std::min(kPackRows, layout_.N - n0);
            at::Tensor w = weight.narrow(0, n0, c).to(at::kFloat).contiguous();
            panel::pack_rows(layout_, w.data_ptr<float>(), layout_.K, n0, c, packed_.data_ptr<uint8_t>(),
                             {data(scale_), data(offset_)});
            if (rows_read) rows_read(n0, n0 + c);
        }
    }

    void forward(const float* x, int64_t M, float* y) const override;

    void row(int64_t n, float* out) const override {
        panel::unpack_row(layout_, packed_.data_ptr<uint8_t>(), data(scale_), n, out);
    }
    int64_t bytes() const override {
        int64_t n = 0;
        for (const at::Tensor* t : {&packed_, &scale_, &offset_})
            if (t->defined()) n += static_cast<int64_t>(t->nbytes());
        return n;
    }
    int int8_weight_max() const override { return layout_.int8_max; }
    std::string name() const override {
        return std::string("panel ") + panel::kernel_name(kernel_) + (layout_.narrow_int8() ? ", 7-bit weights" : "");
    }

private:
    panel::Layout layout_;
    panel::Kernel kernel_;
    at::Tensor packed_, scale_, offset_, bias_;
};

// Per-thread buffers of the quantized activations: a decoding step calls ~50 products, each would
// otherwise allocate three.
struct Scratch {
    std::vector<uint8_t> q, centred, magnitude;
    std::vector<float> scale, min;
};

void PanelMatmul::forward(const float* x, int64_t M, float* y) const {
    const int64_t K = layout_.K, ld = layout_.k_padded;
    panel::Product pr;
    pr.layout = &layout_;
    pr.packed = packed_.data_ptr<uint8_t>();
    pr.column_scale = data(scale_);
    pr.column_offset = data(offset_);
    pr.bias = bias_.defined() ? bias_.data_ptr<float>() : nullptr;
    pr.M = M;
    pr.x = x;
    pr.ldx = K;
    pr.y = y;
    pr.ldy = layout_.N;
    // Chunks of at least ~256k multiply-adds (a few microseconds): a batch-1 product of a 1024-wide
    // layer is then split in ~16-panel chunks, a 32-row one panel by panel.
    const int64_t per_panel = std::max<int64_t>(1, M * ld * panel::kCols);
    panel::Kernel kernel = kernel_;
    int64_t grain = std::max<int64_t>(1, (int64_t{1} << 18) / per_panel);
    if (kernel == panel::Kernel::Amx) {
        if (!panel::amx_pays_off(M)) {
            kernel = panel::Kernel::Avx512Vnni;
        } else {
            // AMX runs 1.3-2x VNNI's rate: chunks of ~1M multiply-adds, and at least the two
            // panels one pass of its tiles takes.
            grain = std::max<int64_t>(2, (int64_t{1} << 20) / per_panel);
        }
    }
    thread_local Scratch s;
    if (quantized(layout_.format)) {
        // Only the padding inputs past K need zeros (quantize_rows_u8 writes the rest): zeroing
        // the whole buffer was a serial memset of M x K bytes per product, 0.15 s of W2's 3.6 s.
        // AMX reads whole blocks of 16 rows: zero rows up to the next block here, once a product,
        // rather than a padded copy of the last block in every chunk of panels.
        const int64_t rows = kernel == panel::Kernel::Amx ? (M + 15) / 16 * 16 : M;
        s.q.resize(static_cast<size_t>(rows * ld));
        if (rows > M) std::memset(s.q.data() + M * ld, 0, static_cast<size_t>((rows - M) * ld));
        s.scale.resize(static_cast<size_t>(M));
        s.min.resize(static_cast<size_t>(M));
        if (ld > K)
            for (int64_t i = 0; i < M; ++i) std::memset(s.q.data() + i * ld + K, 0, static_cast<size_t>(ld - K));
        quantize_rows_u8(x, M, K, K, s.q.data(), s.scale.data(), s.min.data(), ld);
        pr.xq = {s.q.data(), nullptr, nullptr, ld, s.scale.data(), s.min.data(), rows};
        if (panel::kernel_wants_planes(layout_, kernel_)) {
            s.centred.resize(s.q.size());
            s.magnitude.resize(s.q.size());
            panel::prepare_int8_planes(s.q.data(), M * ld, s.centred.data(), s.magnitude.data());
            pr.xq.centred = s.centred.data();
            pr.xq.magnitude = s.magnitude.data();
        }
    }
    parallel_for(0, layout_.panels, grain, [&](int64_t p0, int64_t p1) { panel::multiply(pr, kernel, p0, p1); });
}

}  // namespace

std::unique_ptr<MatmulBackend> make_panel_matmul(const at::Tensor& weight, const at::Tensor& bias, MatmulKind kind,
                                                 const CpuMatmul::RowsRead& rows_read, bool full_int8) {
    return std::make_unique<PanelMatmul>(weight, bias, kind, rows_read, full_int8);
}

}  // namespace lorascope::ops
