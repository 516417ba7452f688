// Reading the records tests/oracle/models_oracle.py writes for each tiny model variant.
#pragma once

#include <nlohmann/json.hpp>

#include "model_variants.h"

#include <cstdlib>
#include <string>
#include <vector>

namespace lorascope::test {

// LORASCOPE_TEST_DEVICE (default "cpu"): where the parity tests load the models; scripts/gpu-check
// sets it to cuda together with the oracle's --device, so both sides run on the same GPU.
inline std::string test_device() {
    const char* device = std::getenv("LORASCOPE_TEST_DEVICE");
    return device && *device ? std::string(device) : std::string("cpu");
}

std::string variant_dir(const std::string& variant);        // <oracle>/models/<variant>
std::string variant_model_dir(const std::string& variant);  // .../model
// Throws std::runtime_error naming the file when the oracle output is missing (tests must fail).
nlohmann::json load_records(const std::string& variant);

}  // namespace lorascope::test
