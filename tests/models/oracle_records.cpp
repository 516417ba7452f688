#include "oracle_records.h"

#include <fstream>
#include <stdexcept>

#include "test_env.h"

namespace lorascope::test {

std::string variant_dir(const std::string& variant) { return oracle_dir() + "/models/" + variant; }
std::string variant_model_dir(const std::string& variant) { return variant_dir(variant) + "/model"; }

nlohmann::json load_records(const std::string& variant) {
    const std::string path = variant_dir(variant) + "/records.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": missing (run the oracle_models step)");
    return nlohmann::json::parse(in);
}

}  // namespace lorascope::test
