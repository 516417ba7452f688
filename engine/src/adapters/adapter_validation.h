// Checks a PEFT adapter against the model it is about to be attached to, before any tensor is
// materialised: every adapted module is a linear of this architecture, the A/B shapes fit it, the
// config's target and rank/alpha patterns resolve, and the adapter's declared base is compared
// with the loaded model's name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/peft.h"
#include "lorascope/config.h"
#include "models/linear.h"

namespace lorascope::adapters {

// One adapted module: the adapter's tensors and the model's linear they modify.
struct ModuleBinding {
    const io::LoraModuleTensors* tensors = nullptr;
    models::LinearSite site;
};

struct AdapterValidation {
    std::vector<ModuleBinding> modules;     // what will be applied, in the adapter's module order
    std::vector<std::string> targets;       // distinct short names ("q", "query_key_value", "lm_head")
    int64_t rank = 0;                       // the config's r (patterns may vary it per module)
    double alpha = 0;
    int64_t parameters = 0;                 // lora_A + lora_B elements of the applied modules
    std::vector<std::string> warnings;      // base-name mismatch, ignored tensors, uncovered targets
};

// Throws lorascope::Error naming the adapter file (and tensor/module) on the first problem that
// would make the adapter compute something other than what PEFT computes on this model.
AdapterValidation validate_adapter(const io::PeftAdapter& adapter, const std::vector<models::LinearSite>& sites,
                                   const ModelConfig& model_config, const std::string& model_dir);

// The last component of a module path ("transformer.h.0.mlp.dense_h_to_4h" -> "dense_h_to_4h").
std::string module_short_name(const std::string& module);

}  // namespace lorascope::adapters
