#include "models/transformer_block.h"

#include "models/kv_pool.h"
#include "ops/aten_on_pool.h"

namespace lorascope::models {

namespace {

// a + b, on our pool's threads where worth it (ops/aten_on_pool.h).
at::Tensor sum(const at::Tensor& a, const at::Tensor& b) {
    if (ops::worth_sharing(a) && ops::worth_sharing(b) && a.sizes() == b.sizes()) return ops::add_on_pool(a, b);
    return a + b;
}

template <typename Sublayer>
at::Tensor residual(NormPlacement placement, const Norm& norm, const at::Tensor& x, Sublayer&& f) {
    switch (placement) {
        case NormPlacement::Pre: return sum(x, f(norm.forward(x)));
        case NormPlacement::PreResidualFromNorm: {
            at::Tensor normed = norm.forward(x);
            return sum(normed, f(normed));
        }
        case NormPlacement::Post: return norm.forward(sum(x, f(x)));
    }
    return x;
}

// HF decides with tensor ops (torch.where on isinf().any()), so neither guard waits for the device.
at::Tensor clamp_each_sublayer(const at::Tensor& h) {
    const double max = 65504.0;  // torch.finfo(torch.float16).max
    const auto opts = h.options();
    at::Tensor limit = at::where(at::isinf(h).any(), at::full({}, max - 1000.0, opts), at::full({}, max, opts));
    return at::minimum(at::maximum(h, -limit), limit);
}

at::Tensor clamp_on_inf_or_nan(const at::Tensor& h) {
    const double limit = 65504.0 - 1000.0;
    at::Tensor bad = at::logical_or(at::isinf(h).any(), at::isnan(h).any());
    return at::where(bad, h.clamp(-limit, limit), h);
}

}  // namespace

at::Tensor TransformerBlock::forward(const at::Tensor& h, const at::Tensor& self_bias, const PagedStep* step,
                                     int64_t layer, const LoraHook* lora, const RotaryTables* rotary) const {
    // The guards look at the residual stream's dtype, as HF does: once T5's float32 wo has promoted
    // it to float32, they stop applying.
    auto guard_sublayer = [&](at::Tensor t) {
        if (half_guard == HalfOverflowGuard::ClampEachSublayer && t.scalar_type() == at::kHalf)
            return clamp_each_sublayer(t);
        return t;
    };
    at::Tensor x = guard_sublayer(residual(placement, self_norm, h, [&](const at::Tensor& in) {
        return self_attn.forward(in, self_bias, step, layer, lora, rotary);
    }));
    if (has_cross) {
        x = guard_sublayer(residual(placement, cross_norm, x, [&](const at::Tensor& in) {
            return cross_attn.forward(in, *step, layer, lora);
        }));
    }
    x = guard_sublayer(residual(placement, ffn_norm, x, [&](const at::Tensor& in) { return ffn.forward(in, lora); }));
    if (half_guard == HalfOverflowGuard::ClampOnInfOrNan && x.scalar_type() == at::kHalf) x = clamp_on_inf_or_nan(x);
    return x;
}

}  // namespace lorascope::models
