// A PEFT LoRA adapter directory: adapter_config.json plus the lora_A/lora_B tensors of
// adapter_model.safetensors, indexed by module path. Torch-free; tensors stay memory-mapped.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/safetensors.h"
#include "lorascope/adapter.h"

namespace lorascope::io {

struct LoraModuleTensors {
    std::string module;            // e.g. "transformer.h.0.self_attention.query_key_value"
    const SafetensorsFile* file = nullptr;
    const TensorInfo* a = nullptr;  // lora_A.weight [rank, in_features]
    const TensorInfo* b = nullptr;  // lora_B.weight [out_features, rank]
    int64_t rank = 0;
    int64_t in_features = 0;
    int64_t out_features = 0;
    double scaling = 0;            // from the config's patterns for this module
    // When lm_head / embed_tokens is targeted, PEFT (save_embedding_layers="auto") also stores
    // that layer's full base weight as "<module>.base_layer.weight". PEFT loads it over the base
    // model's weight; whoever attaches the adapter must check it equals the loaded base weight.
    const TensorInfo* base_weight = nullptr;
};

class PeftAdapter {
public:
    // Validates config and tensors together: every lora_A has its lora_B, ranks agree with the
    // config's (pattern-resolved) r, shapes are 2-D, dtypes floating. Errors name the file and tensor.
    static std::shared_ptr<PeftAdapter> open(const std::string& dir);

    const AdapterConfig& config() const { return config_; }
    const std::vector<LoraModuleTensors>& modules() const { return modules_; }  // sorted by module
    const LoraModuleTensors* find(const std::string& module) const;
    const SafetensorsCheckpoint& weights() const { return *weights_; }
    const std::string& directory() const { return dir_; }
    int64_t parameter_count() const;
    uint64_t file_bytes() const { return weights_->file_bytes(); }

    static constexpr const char* kTensorPrefix = "base_model.model.";

private:
    std::string dir_;
    AdapterConfig config_;
    std::shared_ptr<SafetensorsCheckpoint> weights_;
    std::vector<LoraModuleTensors> modules_;
    std::unordered_map<std::string, size_t> by_module_;
};

}  // namespace lorascope::io
