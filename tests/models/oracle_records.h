// Reading the records tests/oracle/models_oracle.py writes for each tiny model variant.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace lorascope::test {

inline const std::vector<std::string>& model_variants() {
    static const std::vector<std::string> names = {"t5_v1_0", "t5_v1_1", "bart_plain", "bart_scaled_bare",
                                                   "bloom_4h", "bloom_6h_postln"};
    return names;
}

std::string variant_dir(const std::string& variant);        // <oracle>/models/<variant>
std::string variant_model_dir(const std::string& variant);  // .../model
// Throws std::runtime_error naming the file when the oracle output is missing (tests must fail).
nlohmann::json load_records(const std::string& variant);

}  // namespace lorascope::test
