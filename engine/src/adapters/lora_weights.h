// One adapter's LoRA matrices materialised for the loaded model: per linear site, A and the
// scaled B in the model's dtype on its device, indexed by LinearSite::id.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/adapter_validation.h"
#include "io/peft.h"

namespace lorascope::adapters {

// What one adapter adds at one site: y += (x a^T) bt, with the scaling folded into bt. A keeps
// PEFT's [r, in] layout; B is stored transposed, [r, out], so that the CPU kernels
// (lora_kernels.h) read both factors row by row, rank by rank, and the ATen products take bt as a
// plain right-hand side.
struct SiteDelta {
    at::Tensor a;     // [r, in], contiguous
    at::Tensor bt;    // [r, out] = (scaling * B)^T, contiguous
    int64_t rank = 0;
    double scaling = 0;
};

// One site's factors in PEFT's layout, float32 on the CPU, before they are placed for the model.
struct SiteFactors {
    int site_id = -1;
    at::Tensor a;     // [r, in]
    at::Tensor b;     // [out, r]
    double scaling = 0;
};

class LoraWeights {
public:
    // Returns the base weight [out, in] of a module of the loaded model (float32 is fine); used to
    // check the copies of lm_head that PEFT stores beside LoRA weights.
    using BaseWeightLookup = std::function<at::Tensor(const std::string& module)>;

    // Converts the validated modules' tensors. Throws lorascope::Error naming the adapter file when
    // a stored base weight differs from the model's (PEFT would overwrite the model's with it).
    static std::shared_ptr<const LoraWeights> materialise(const io::PeftAdapter& adapter, const AdapterValidation& validation,
                                                          size_t site_count, at::TensorOptions options,
                                                          const BaseWeightLookup& base_weight);

    // Factors computed another way (a merge of adapters: adapters/adapter_merge.h).
    static std::shared_ptr<const LoraWeights> from_factors(const std::vector<SiteFactors>& factors, size_t site_count,
                                                           at::TensorOptions options);

    const SiteDelta* at_site(int site_id) const {
        if (site_id < 0 || static_cast<size_t>(site_id) >= sites_.size() || !sites_[site_id]) return nullptr;
        return &*sites_[site_id];
    }
    int64_t bytes() const { return bytes_; }
    int64_t max_rank() const { return max_rank_; }
    size_t module_count() const { return modules_; }

private:
    std::vector<std::optional<SiteDelta>> sites_;
    int64_t bytes_ = 0;
    int64_t max_rank_ = 0;
    size_t modules_ = 0;
};

}  // namespace lorascope::adapters
