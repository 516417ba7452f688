#include "models/layers.h"

#include "lorascope/error.h"

namespace lorascope::models {

Norm::Norm(Kind kind, at::Tensor weight, at::Tensor bias, double eps)
    : kind_(kind), weight_(std::move(weight)), bias_(std::move(bias)), eps_(eps) {}

at::Tensor Norm::forward(const at::Tensor& x) const {
    if (kind_ == Kind::Layer) return at::layer_norm(x, {weight_.size(0)}, weight_, bias_, eps_);
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
    throw Error(ErrorKind::Unsupported, where, "activation '" + name + "' is not supported");
}

at::Tensor activate(Activation act, const at::Tensor& x) {
    switch (act) {
        case Activation::Relu: return at::relu(x);
        case Activation::GeluTanh: return at::gelu(x, "tanh");
        case Activation::GeluErf: return at::gelu(x);
    }
    return x;
}

FeedForward::FeedForward(Linear wi, Linear wo, Activation act)
    : gated_(false), wi_(std::move(wi)), wo_(std::move(wo)), act_(act) {}

FeedForward::FeedForward(Linear wi_0, Linear wi_1, Linear wo, Activation act)
    : gated_(true), wi_gate_({wi_0, wi_1}), inner_(wi_0.weight().size(0)), wo_(std::move(wo)), act_(act) {}

at::Tensor FeedForward::output(const at::Tensor& hidden, const LoraHook* lora) const {
    const at::ScalarType wo_dtype = wo_.weight().scalar_type();
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
