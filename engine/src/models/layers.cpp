#include "models/layers.h"

#include <algorithm>
#include <cmath>

#include "lorascope/error.h"
#include "ops/aten_on_pool.h"
#include "ops/cpu_isa.h"
#include "ops/dot.h"
#include "ops/thread_pool.h"

namespace lorascope::models {

Norm::Norm(Kind kind, at::Tensor weight, at::Tensor bias, double eps)
    : kind_(kind), weight_(std::move(weight)), bias_(std::move(bias)), eps_(eps) {}

namespace {

// T5LayerNorm for one row in float32: x * rsqrt(mean(x^2) + eps) * weight. Built for AVX2+FMA and
// for the baseline ISA from this one body, picked from the instruction sets in effect.
__attribute__((always_inline)) inline void rms_norm_body(const float* x, const float* weight, float* out, int64_t d,
                                                         float eps) {
    const float sum = ops::dot(x, x, d);
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(d) + eps);
    for (int64_t k = 0; k < d; ++k) out[k] = x[k] * scale * weight[k];
}

void rms_norm_row(const float* x, const float* weight, float* out, int64_t d, float eps) {
    rms_norm_body(x, weight, out, d, eps);
}

#if LORASCOPE_X86
__attribute__((target("avx2,fma"))) void rms_norm_row_avx2(const float* x, const float* weight, float* out, int64_t d,
                                                            float eps) {
    rms_norm_body(x, weight, out, d, eps);
}
#endif

// The same as the ATen expression in Norm::forward, in one pass per row: a decoding step runs 19 of
// these norms on [32, 512] rows, where ATen's six operators (each allocating) cost more than the
// arithmetic.
bool rms_norm_cpu_applies(const at::Tensor& x, const at::Tensor& weight) {
    return x.device().is_cpu() && x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
           x.is_contiguous() && weight.is_contiguous() && x.dim() >= 1 && x.size(-1) == weight.size(0);
}

at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& weight, double eps) {
    const int64_t d = x.size(-1), rows = d ? x.numel() / d : 0;
    at::Tensor out = at::empty_like(x);
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    float* op = out.data_ptr<float>();
    auto* row = &rms_norm_row;
#if LORASCOPE_X86
    if (ops::cpu_features().avx2) row = &rms_norm_row_avx2;
#endif
    ops::parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) row(xp + r * d, wp, op + r * d, d, static_cast<float>(eps));
    });
    return out;
}

}  // namespace

at::Tensor Norm::forward(const at::Tensor& x) const {
    if (kind_ == Kind::Layer) {
        if (ops::worth_sharing(x) && (!weight_.defined() || weight_.scalar_type() == at::kFloat))
            return ops::layer_norm_on_pool(x, weight_, bias_, eps_);
        return at::layer_norm(x, {weight_.size(0)}, weight_, bias_, eps_);
    }
    if (rms_norm_cpu_applies(x, weight_)) return rms_norm_cpu(x, weight_, eps_);
    // As T5LayerNorm: the mean square in fp32 whatever the activations' dtype, then the weight.
    at::Tensor variance = x.to(at::kFloat).pow(2).mean(-1, /*keepdim=*/true);
    at::Tensor normed = x * at::rsqrt(variance + eps_);
    if (weight_.scalar_type() != at::kFloat) normed = normed.to(weight_.scalar_type());
    return normed.mul_(weight_);
}

Activation parse_activation(const std::string& name, const std::string& where) {
    if (name == "relu") return Activation::Relu;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "bloom_gelu")
        return Activation::GeluTanh;
    if (name == "gelu") return Activation::GeluErf;
    if (name == "silu" || name == "swish") return Activation::Silu;
    throw Error(ErrorKind::Unsupported, where, "activation '" + name + "' is not supported");
}

at::Tensor activate(Activation act, const at::Tensor& x) {
    if (ops::worth_sharing(x)) {  // the same ATen kernels, on our pool's threads (ops/aten_on_pool.h)
        switch (act) {
            case Activation::Relu:  // at::relu is clamp_min(x, 0)
                return ops::map_elements(x, [](at::Tensor& o, const at::Tensor& i) { at::clamp_min_out(o, i, 0); });
            case Activation::GeluTanh:
                return ops::map_elements(x, [](at::Tensor& o, const at::Tensor& i) { at::gelu_out(o, i, "tanh"); });
            case Activation::GeluErf:
                return ops::map_elements(x, [](at::Tensor& o, const at::Tensor& i) { at::gelu_out(o, i); });
            case Activation::Silu:
                return ops::map_elements(x, [](at::Tensor& o, const at::Tensor& i) { at::silu_out(o, i); });
        }
    }
    switch (act) {
        case Activation::Relu: return at::relu(x);
        case Activation::GeluTanh: return at::gelu(x, "tanh");
        case Activation::GeluErf: return at::gelu(x);
        case Activation::Silu: return at::silu(x);
    }
    return x;
}

at::Tensor Embedding::forward(const at::Tensor& ids) const {
    if (packed_) return packed_->rows(ids.cpu());
    return at::embedding(table_, ids);
}

FeedForward::FeedForward(Linear wi, Linear wo, Activation act)
    : gated_(false), wi_(std::move(wi)), wo_(std::move(wo)), act_(act) {}

FeedForward::FeedForward(FusedLinear wi_gate, Linear wo, Activation act)
    : gated_(true),
      wi_gate_(std::move(wi_gate)),
      inner_(wi_gate_.out_features() / 2),
      wo_(std::move(wo)),
      act_(act) {}

at::Tensor FeedForward::output(const at::Tensor& hidden, const LoraHook* lora) const {
    const at::ScalarType wo_dtype = wo_.input_dtype();
    if (hidden.scalar_type() == wo_dtype) return wo_.forward(hidden, lora);
    // T5 in float16 keeps wo in float32 (HF's _keep_in_fp32_modules = ["wo"]) and, as HF's
    // T5DenseActDense does, feeds it the activations cast up; the block's residual then promotes
    // to float32. Adapter factors live in the model's dtype, so their delta is computed from the
    // uncast activations and added to the float32 output.
    at::Tensor y = wo_.forward(hidden.to(wo_dtype), nullptr);
    if (lora) {
        at::Tensor delta = at::zeros(y.sizes(), hidden.options());
        lora->add_delta(wo_.site(), hidden, delta);
        y.add_(delta);
    }
    return y;
}

at::Tensor FeedForward::forward(const at::Tensor& x, const LoraHook* lora) const {
    if (!gated_) return output(activate(act_, wi_.forward(x, lora)), lora);
    at::Tensor both = wi_gate_.forward(x, lora);
    at::Tensor hidden = activate(act_, both.narrow(-1, 0, inner_)).mul_(both.narrow(-1, inner_, inner_));
    return output(hidden, lora);
}

}  // namespace lorascope::models
