#include "lorascope/model_check.h"

#include <ATen/ATen.h>

#include <chrono>
#include <utility>
#include <vector>

#include "adapters/adapter_registry.h"
#include "models/model.h"
#include "weights/weight_store.h"

namespace lorascope {

struct AdapterValidator::Impl {
    std::string model_dir;
    std::unique_ptr<models::Model> model;
    std::unique_ptr<adapters::AdapterRegistry> registry;  // declared after the model it refers to
};

AdapterValidator::AdapterValidator(std::string model_dir) : impl_(std::make_unique<Impl>()) {
    impl_->model_dir = std::move(model_dir);
}

AdapterValidator::~AdapterValidator() = default;

AdapterInfo AdapterValidator::validate(const std::string& name, const std::string& adapter_dir) {
    if (!impl_->model) {
        impl_->model = models::load_model(impl_->model_dir);
        impl_->registry = std::make_unique<adapters::AdapterRegistry>(*impl_->model);
    }
    return impl_->registry->load(name, adapter_dir);
}

WeightLoadFacts load_all_weights(const std::string& model_dir, const ModelConfig& config) {
    const auto start = std::chrono::steady_clock::now();
    weights::WeightLoadOptions options;
    options.dtype = at::kFloat;
    auto store = weights::WeightStore::open(model_dir, config, options);
    std::vector<at::Tensor> kept;
    WeightLoadFacts facts;
    for (const auto& name : store->file_tensor_names()) {
        at::Tensor t = store->get(name).contiguous();
        facts.bytes += t.numel() * t.element_size();
        if (t.scalar_type() == at::kFloat) {
            const float* p = t.data_ptr<float>();
            double acc = 0;
            for (int64_t i = 0, n = t.numel(); i < n; ++i) acc += p[i];
            facts.checksum += acc;
        }
        kept.push_back(std::move(t));
    }
    facts.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    facts.tensors = static_cast<int64_t>(kept.size());
    return facts;
}

}  // namespace lorascope
