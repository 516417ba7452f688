// Norms and feed-forward blocks shared by T5, BART, BLOOM and the Llama family.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "models/linear.h"

namespace lorascope::models {

// T5's (and Llama's) RMS norm (fp32 variance, no mean subtraction, no bias) or a standard LayerNorm.
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

// A token embedding table: a plain [vocab, width] tensor, or rows read from a packed matrix
// (an LM head with tied weights, or an int8/bfloat16 table) and returned as float32.
class Embedding {
public:
    Embedding() = default;
    explicit Embedding(at::Tensor table) : table_(std::move(table)) {}
    explicit Embedding(std::shared_ptr<const ops::CpuMatmul> packed) : packed_(std::move(packed)) {}
    at::Tensor forward(const at::Tensor& ids) const;  // [...] -> [..., width]
    bool defined() const { return table_.defined() || packed_; }

private:
    at::Tensor table_;
    std::shared_ptr<const ops::CpuMatmul> packed_;
};

enum class Activation { Relu, GeluTanh, GeluErf, Silu };
// Maps HF's activation names ("relu", "gelu", "gelu_new", "gelu_pytorch_tanh", "silu", ...).
// Throws lorascope::Error (Unsupported) naming `where` for anything else.
Activation parse_activation(const std::string& name, const std::string& where);
at::Tensor activate(Activation act, const at::Tensor& x);

// wo(act(wi x)) or, gated, wo(act(wi_0 x) * wi_1 x) with wi_0|wi_1 fused into one matmul (T5's
// gated variants; Llama's down(silu(gate x) * up x)).
class FeedForward {
public:
    FeedForward() = default;
    FeedForward(Linear wi, Linear wo, Activation act);                  // plain
    FeedForward(FusedLinear wi_gate, Linear wo, Activation act);        // gated: wi_0|wi_1 fused
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
