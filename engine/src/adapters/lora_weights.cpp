#include "adapters/lora_weights.h"

#include <algorithm>

#include "runtime/allocator_policy.h"
#include "weights/safetensors_tensor.h"
#include "lorascope/error.h"

namespace lorascope::adapters {

namespace {

// An adapter's factors on the CPU: consecutive 64-byte aligned pieces of one tensor, each site's
// A followed by its BT, so that a decoding step reads each (adapter, site) as one run of memory;
// from 4 MiB on, in huge pages. Measured on W4 (8 adapters, 42 MB of factors read per step, int8,
// two threads), the LoRA kernel's time over a run: 200-230 ms with a tensor per factor, 155-160 ms
// from one block per adapter, 140-150 ms from huge pages. Smaller adapters keep 4 KiB pages, so
// that a tiny one does not hold a 2 MiB page.
class FactorBlock {
public:
    FactorBlock(const std::vector<SiteFactors>& factors, const at::TensorOptions& options) : options_(options) {
        if (!options.device().is_cpu()) return;
        int64_t elements = 0;
        for (const auto& f : factors) elements += piece(f.a.numel()) + piece(f.b.numel());
        const size_t bytes = static_cast<size_t>(elements) * options.dtype().itemsize();
        if (bytes >= 2 * runtime::kHugePageBytes) {
            std::shared_ptr<void> pages = runtime::allocate_huge_page_block(bytes);
            block_ = at::from_blob(pages.get(), {elements}, [pages](void*) mutable { pages.reset(); }, options);
        } else if (elements > 0) {
            block_ = at::empty({elements}, options);
        }
    }
    // `value` in the adapter's type, contiguous: in the block on the CPU, a tensor of its own elsewhere.
    at::Tensor place(const at::Tensor& value) {
        if (!block_.defined()) return value.to(options_).contiguous();
        at::Tensor t = block_.narrow(0, used_, value.numel()).view(value.sizes());
        t.copy_(value);
        used_ += piece(value.numel());
        return t;
    }

private:
    int64_t piece(int64_t elements) const {
        const int64_t per_line = std::max<int64_t>(1, 64 / static_cast<int64_t>(options_.dtype().itemsize()));
        return (elements + per_line - 1) / per_line * per_line;
    }
    at::TensorOptions options_;
    at::Tensor block_;
    int64_t used_ = 0;
};

}  // namespace

std::shared_ptr<const LoraWeights> LoraWeights::materialise(const io::PeftAdapter& adapter,
                                                            const AdapterValidation& validation, size_t site_count,
                                                            at::TensorOptions options,
                                                            const BaseWeightLookup& base_weight) {
    const std::string st_path = adapter.weights().source_path();
    std::vector<SiteFactors> factors;
    for (const auto& binding : validation.modules) {
        const io::LoraModuleTensors& m = *binding.tensors;
        if (m.base_weight) {
            // Compared in float32 on the CPU: the copy is only a consistency check.
            at::Tensor stored = weights::tensor_from_safetensors(*m.file, *m.base_weight, at::kFloat, at::kCPU);
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
        SiteFactors f;
        f.site_id = binding.site.id;
        f.a = weights::tensor_from_safetensors(*m.file, *m.a, at::kFloat, at::kCPU);
        f.b = weights::tensor_from_safetensors(*m.file, *m.b, at::kFloat, at::kCPU);
        f.scaling = m.scaling;
        if (!at::isfinite(f.a).all().item<bool>() || !at::isfinite(f.b).all().item<bool>())
            throw Error(ErrorKind::Format, st_path, "module '" + m.module + "' has non-finite LoRA weights");
        factors.push_back(std::move(f));
    }
    return from_factors(factors, site_count, options);
}

std::shared_ptr<const LoraWeights> LoraWeights::from_factors(const std::vector<SiteFactors>& factors, size_t site_count,
                                                             at::TensorOptions options) {
    auto w = std::make_shared<LoraWeights>();
    w->sites_.resize(site_count);
    FactorBlock block(factors, options);
    for (const SiteFactors& f : factors) {
        SiteDelta d;
        d.rank = f.a.size(0);
        d.scaling = f.scaling;
        d.a = block.place(f.a);
        d.bt = block.place((f.b * f.scaling).t());   // the scaling folded into B once
        w->bytes_ += static_cast<int64_t>(d.a.nbytes() + d.bt.nbytes());
        w->max_rank_ = std::max(w->max_rank_, d.rank);
        w->sites_[static_cast<size_t>(f.site_id)] = std::move(d);
        ++w->modules_;
    }
    return w;
}

}  // namespace lorascope::adapters
