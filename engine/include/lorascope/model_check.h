// Checks that need the model itself loaded (lorascope_engine, LibTorch inside): adapter
// validation against a model, and the full weight load that `lorascope-cli info --load` times.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lorascope/config.h"
#include "lorascope/engine.h"

namespace lorascope {

// Validates adapters against one model exactly as an Engine's registry does before accepting them
// (modules exist in this architecture, A/B shapes fit, patterns resolve), and materialises them,
// so that the AdapterInfo is the one Engine::load_adapter would give.
class AdapterValidator {
public:
    // Nothing is loaded until the first validate().
    explicit AdapterValidator(std::string model_dir);
    ~AdapterValidator();
    AdapterValidator(const AdapterValidator&) = delete;
    AdapterValidator& operator=(const AdapterValidator&) = delete;

    // Loads the model on first use (errors name its directory and file). Throws lorascope::Error
    // naming the adapter file and the problem, also for a name validated before: names are kept,
    // as in an engine.
    AdapterInfo validate(const std::string& name, const std::string& adapter_dir);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct WeightLoadFacts {
    std::string dtype = "float32";  // what every floating tensor was converted to
    int64_t tensors = 0;
    int64_t bytes = 0;              // of the loaded tensors
    double seconds = 0;             // open to last tensor, checksum included
    double checksum = 0;            // sum of every float32 element (touches every byte)
};

// Loads every stored tensor of the model's checkpoint as float32 on the CPU and keeps them all
// alive until the last is loaded, as a model would, so that a peak-memory measurement sees the
// real peak. Freed on return.
WeightLoadFacts load_all_weights(const std::string& model_dir, const ModelConfig& config);

}  // namespace lorascope
