#include "lorascope/score.h"

#include <c10/core/InferenceMode.h>

#include "runtime/compute_choice.h"
#include "runtime/allocator_policy.h"

#include <optional>

#include "adapters/adapter_registry.h"
#include "adapters/multi_lora_hook.h"
#include "models/model.h"
#include "models/score.h"

namespace lorascope {

namespace {

class ModelScorer final : public Scorer {
public:
    explicit ModelScorer(std::unique_ptr<models::Model> model)
        : model_(std::move(model)), registry_(std::make_unique<adapters::AdapterRegistry>(*model_)) {}

    const ModelConfig& model_config() const override { return model_->config(); }
    bool is_encoder_decoder() const override { return model_->is_encoder_decoder(); }
    int64_t vocab_size() const override { return model_->vocab_size(); }

    AdapterInfo load_adapter(const std::string& name, const std::string& adapter_dir) override {
        c10::InferenceMode inference;
        return registry_->load(name, adapter_dir);
    }

    ScoreResult score(const std::vector<int64_t>& source, const std::vector<int64_t>& labels,
                      const std::string& adapter) override {
        c10::InferenceMode inference;
        if (adapter.empty()) return models::score(*model_, source, labels);
        const adapters::AdapterLease lease = registry_->acquire(adapter);
        const adapters::MultiLoraHook hook({lease.weights()}, model_->options().device());
        return models::score(*model_, source, labels, &hook);
    }

private:
    std::unique_ptr<models::Model> model_;
    std::unique_ptr<adapters::AdapterRegistry> registry_;  // refers to *model_: destroyed first
};

}  // namespace

std::unique_ptr<Scorer> Scorer::open(const std::string& model_dir, const std::string& dtype,
                                     const std::string& kv_cache_dtype) {
    // Inference tensors, as the engine loads them: no autograd metadata on the weights.
    c10::InferenceMode inference;
    runtime::settle_cpu_allocator();
    const auto load = models::LoadOptions::from(runtime::choose_compute(dtype, "cpu", kv_cache_dtype));
    return std::make_unique<ModelScorer>(models::load_model(model_dir, load));
}

}  // namespace lorascope
