#include "adapters/lora_weights.h"

#include <algorithm>

#include "weights/safetensors_tensor.h"
#include "lorascope/error.h"

namespace lorascope::adapters {

std::shared_ptr<const LoraWeights> LoraWeights::materialise(const io::PeftAdapter& adapter,
                                                            const AdapterValidation& validation, size_t site_count,
                                                            at::TensorOptions options,
                                                            const BaseWeightLookup& base_weight) {
    auto w = std::make_shared<LoraWeights>();
    w->sites_.resize(site_count);
    const std::string st_path = adapter.weights().source_path();
    for (const auto& binding : validation.modules) {
        const io::LoraModuleTensors& m = *binding.tensors;
        if (m.base_weight) {
            // Compared in float32 on the CPU: the copy is only a consistency check.
            at::Tensor stored = io::tensor_from_safetensors(*m.file, *m.base_weight, at::kFloat, at::kCPU);
            at::Tensor mine = base_weight ? base_weight(m.module) : at::Tensor();
            if (!mine.defined())
                throw Error(ErrorKind::Internal, st_path, "cannot read the loaded model's '" + m.module + ".weight' to compare");
            mine = mine.to(at::kFloat).to(at::kCPU);
            if (stored.sizes() != mine.sizes() || !at::allclose(stored, mine, 1e-3, 1e-5))
                throw Error(ErrorKind::Format, st_path,
                            "tensor '" + std::string(io::PeftAdapter::kTensorPrefix) + m.module +
                                ".base_layer.weight' differs from the loaded model's '" + m.module +
                                ".weight'; PEFT would replace the model's weight with it (adapter saved from another base?)");
        }
        // A and B are converted once from the mapping, B with the scaling folded in.
        at::Tensor a = io::tensor_from_safetensors(*m.file, *m.a, at::kFloat, at::kCPU);
        at::Tensor b = io::tensor_from_safetensors(*m.file, *m.b, at::kFloat, at::kCPU);
        if (!at::isfinite(a).all().item<bool>() || !at::isfinite(b).all().item<bool>())
            throw Error(ErrorKind::Format, st_path, "module '" + m.module + "' has non-finite LoRA weights");
        SiteDelta d;
        d.rank = m.rank;
        d.scaling = m.scaling;
        d.a = a.to(options).contiguous();
        d.bt = (b * m.scaling).t().to(options).contiguous();
        w->bytes_ += static_cast<int64_t>(d.a.nbytes() + d.bt.nbytes());
        w->max_rank_ = std::max(w->max_rank_, d.rank);
        w->sites_[static_cast<size_t>(binding.site.id)] = std::move(d);
        ++w->modules_;
    }
    return w;
}

}  // namespace lorascope::adapters
