// Norms and feed-forward blocks shared by T5, BART and BLOOM.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "models/linear.h"

namespace lorascope::models {

// T5's RMS norm (fp32 variance, no mean subtraction, no bias) or a standard LayerNorm.
class Norm {
public:
    enum class Kind { Rms, Layer };
    Norm() = default;
    Norm(Kind kind, at::Tensor weight, at::Tensor bias, double eps);
    at::Tensor forward(const at::Tensor& x) const;
    bool defined() const { return weight_.defined(); }

private:
    Kind kind_ = Kind::Layer;
    at::Tensor weight_, bias_;
    double eps_ = 1e-5;
};

enum class Activation { Relu, GeluTanh, GeluErf };
// Maps HF's activation names ("relu", "gelu", "gelu_new", "gelu_pytorch_tanh", ...).
// Throws lorascope::Error (Unsupported) naming `where` for anything else.
Activation parse_activation(const std::string& name, const std::string& where);
at::Tensor activate(Activation act, const at::Tensor& x);

// wo(act(wi x)) or, gated, wo(act(wi_0 x) * wi_1 x) with wi_0|wi_1 fused into one matmul.
class FeedForward {
public:
    FeedForward() = default;
    FeedForward(Linear wi, Linear wo, Activation act);                  // plain
    FeedForward(Linear wi_0, Linear wi_1, Linear wo, Activation act);   // gated
    at::Tensor forward(const at::Tensor& x, const LoraHook* lora) const;

private:
    at::Tensor output(const at::Tensor& hidden, const LoraHook* lora) const;  // wo, in wo's own dtype

    bool gated_ = false;
    Linear wi_;
    FusedLinear wi_gate_;
    int64_t inner_ = 0;
    Linear wo_;
    Activation act_ = Activation::Relu;
};

}  // namespace lorascope::models
