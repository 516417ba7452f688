#include "models/linear.h"

#include "ops/cpu_gemm.h"

namespace lorascope::models {

at::Tensor affine(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    if (ops::cpu_gemm_applies(x, weight)) return ops::linear_cpu(x, weight, bias);
    return bias.defined() ? at::linear(x, weight, bias) : at::matmul(x, weight.t());
}

Linear::Linear(LinearSite site, at::Tensor weight, at::Tensor bias)
    : site_(std::move(site)), weight_(std::move(weight)), bias_(std::move(bias)) {
    site_.out_features = weight_.size(0);
    site_.in_features = weight_.size(1);
}

at::Tensor Linear::forward(const at::Tensor& x, const LoraHook* lora) const {
    at::Tensor y = packed_ ? packed_->forward(x) : affine(x, weight_, bias_);
    if (lora) lora->add_delta(site_, x, y);
    return y;
}

void Linear::pack(ops::MatmulKind kind, const ops::CpuMatmul::RowsRead& rows_read, bool full_int8) {
    packed_ = std::make_shared<const ops::CpuMatmul>(weight_, bias_, kind, rows_read, full_int8);
    weight_ = at::Tensor();
}

void FusedLinear::pack(ops::MatmulKind kind) {
    packed_ = std::make_shared<const ops::CpuMatmul>(weight_, bias_, kind);
    weight_ = at::Tensor();
}

FusedLinear::FusedLinear(const std::vector<Linear>& parts) {
    std::vector<at::Tensor> weights, biases;
    int64_t offset = 0;
    for (const auto& part : parts) {
        TORCH_CHECK(part.weight().defined(), "FusedLinear: part ", part.site().name, " is already packed");
        sites_.push_back(part.site());
        offsets_.push_back(offset);
        offset += part.weight().size(0);
        weights.push_back(part.weight());
        if (part.bias().defined()) biases.push_back(part.bias());
    }
    out_features_ = offset;
    weight_ = at::cat(weights, 0).contiguous();
    if (!biases.empty()) {
        TORCH_CHECK(biases.size() == parts.size(), "FusedLinear: either all parts have a bias or none");
        bias_ = at::cat(biases, 0).contiguous();
    }
}

at::Tensor FusedLinear::forward(const at::Tensor& x, const LoraHook* lora) const {
    at::Tensor y = packed_ ? packed_->forward(x) : affine(x, weight_, bias_);
    if (lora)
        for (size_t i = 0; i < sites_.size(); ++i)
            lora->add_delta(sites_[i], x, y.narrow(-1, offsets_[i], sites_[i].out_features));
    return y;
}

}  // namespace lorascope::models
