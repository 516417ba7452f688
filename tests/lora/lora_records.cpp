#include "lora_records.h"

#include <fstream>
#include <stdexcept>

#include "test_env.h"

namespace lorascope::test {

LoraBase load_lora_base(const std::string& name) {
    LoraBase b;
    b.name = name;
    b.dir = oracle_dir() + "/lora/" + name;
    const std::string path = b.dir + "/records.json";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("missing oracle records " + path + " (run the oracle_lora step)");
    in >> b.records;
    b.model_dir = b.dir + "/" + b.records["model_dir"].get<std::string>();
    return b;
}

std::string LoraBase::adapter_dir(const std::string& adapter) const {
    for (const auto& run : records["runs"])
        if (run["adapter"] == adapter && !run["adapter_dir"].is_null())
            return dir + "/" + run["adapter_dir"].get<std::string>();
    throw std::runtime_error("no adapter '" + adapter + "' in " + dir + "/records.json");
}

std::vector<std::string> LoraBase::adapter_names() const {
    std::vector<std::string> out;
    for (const auto& run : records["runs"])
        if (!run["adapter_dir"].is_null()) out.push_back(run["adapter"].get<std::string>());
    return out;
}

std::string broken_adapter_dir(const std::string& name) { return oracle_dir() + "/lora/broken/" + name; }

}  // namespace lorascope::test
