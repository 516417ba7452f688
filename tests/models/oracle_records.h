// Reading the records tests/oracle/models_oracle.py writes for each tiny model variant.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace lorascope::test {

inline const std::vector<std::string>& model_variants() {
    static const std::vector<std::string> names = {"t5_v1_0", "t5_v1_1", "bart_plain", "bart_scaled_bare",
                                                   "bart_heads_differ", "bloom_4h", "bloom_6h_postln",
                                                   // issue 30: tests/oracle/seq2seq_variants.py
                                                   "mt5_gated", "mt5_tied", "marian_shared", "marian_separate",
                                                   "mbart_plain", "mbart_forced_lang", "pegasus_table_in_file",
                                                   "pegasus_computed_table", "m2m100_grown_table", "m2m100_untied"};
    return names;
}

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
