// Linear layers that every family shares, with the slot through which per-row LoRA deltas enter.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "ops/cpu_matmul.h"

namespace lorascope::models {

// One Hugging Face module that adapters may target ("decoder.block.0.layer.0.SelfAttention.q").
// `id` is dense per model so that an adapter implementation can index tables instead of hashing.
struct LinearSite {
    std::string name;
    int id = -1;
    int64_t in_features = 0;
    int64_t out_features = 0;
};

// Implemented by the multi-LoRA work: adds each row's adapter delta for `site` into `y` in place.
// x is [B, T, in], y is a (possibly strided) view [B, T, site.out_features] of the layer output.
// Rows are the batch rows of the current call; which adapter a row uses is the hook's business.
class LoraHook {
public:
    virtual ~LoraHook() = default;
    virtual void add_delta(const LinearSite& site, const at::Tensor& x, at::Tensor y) const = 0;
};

// y = x W^T (+ b) with W [out, in]: oneDNN's sgemm for CPU float32 (cpu_gemm.h), ATen otherwise.
at::Tensor affine(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias = {});

// y = x W^T + b for one module.
class Linear {
public:
    Linear() = default;
    Linear(LinearSite site, at::Tensor weight, at::Tensor bias = {});
    at::Tensor forward(const at::Tensor& x, const LoraHook* lora = nullptr) const;

    // Packs the weight for the CPU's matmul in `kind` (ops/cpu_matmul.h) and lets go of the
    // unpacked one: weight() is undefined afterwards.
    void pack(ops::MatmulKind kind, const ops::CpuMatmul::RowsRead& rows_read = {}, bool full_int8 = false);

    const LinearSite& site() const { return site_; }
    const at::Tensor& weight() const { return weight_; }  // undefined once packed
    const at::Tensor& bias() const { return bias_; }
    const std::shared_ptr<const ops::CpuMatmul>& packed() const { return packed_; }
    at::ScalarType input_dtype() const { return packed_ ? at::kFloat : weight_.scalar_type(); }
    bool defined() const { return weight_.defined() || packed_; }

private:
    LinearSite site_;
    at::Tensor weight_;  // [out, in]
    at::Tensor bias_;    // [out] or undefined
    std::shared_ptr<const ops::CpuMatmul> packed_;
};

// Several modules that read the same input (q|k|v, wi_0|wi_1, BLOOM's query_key_value) computed
// with one matmul. Each part keeps its own site, so adapters still target the HF module they name
// and their deltas land in that part's columns of the fused output.
class FusedLinear {
public:
    FusedLinear() = default;
    // Concatenates the parts' weights (and biases, all or none) along the output dimension.
    explicit FusedLinear(const std::vector<Linear>& parts);
    at::Tensor forward(const at::Tensor& x, const LoraHook* lora = nullptr) const;
    void pack(ops::MatmulKind kind);  // as Linear::pack

    const std::vector<LinearSite>& sites() const { return sites_; }
    const std::vector<int64_t>& offsets() const { return offsets_; }
    int64_t out_features() const { return out_features_; }
    bool defined() const { return weight_.defined() || packed_; }

private:
    std::vector<LinearSite> sites_;
    std::vector<int64_t> offsets_;  // column where each part starts in the fused output
    int64_t out_features_ = 0;
    at::Tensor weight_;
    at::Tensor bias_;
    std::shared_ptr<const ops::CpuMatmul> packed_;
};

}  // namespace lorascope::models
