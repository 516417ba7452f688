#include "adapters/adapter_validation.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "lorascope/error.h"

namespace lorascope::adapters {

namespace {

const char* family_name(Family family) {
    switch (family) {
        case Family::T5: return "T5";
        case Family::Bart: return "BART";
        case Family::Bloom: return "BLOOM";
        case Family::Llama: return "Llama-family";
    }
    return "this";
}

std::string last_component(std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string canonical_or_same(const std::string& path) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(std::filesystem::path(path), ec);
    return ec ? path : p.string();
}

// The adapter's base names the loaded model when it is the same hub id, the same directory, or
// a directory with the same final name (a hub id "org/name" checked out as ".../name").
bool same_base(const std::string& declared, const ModelConfig& config, const std::string& model_dir) {
    if (declared.empty()) return false;
    if (!config.name_or_path.empty() && declared == config.name_or_path) return true;
    if (canonical_or_same(declared) == canonical_or_same(model_dir)) return true;
    const std::string tail = last_component(declared);
    return tail == last_component(model_dir) ||
           (!config.name_or_path.empty() && tail == last_component(config.name_or_path));
}

std::string example_sites(const std::vector<models::LinearSite>& sites) {
    std::set<std::string> names;
    for (const auto& s : sites) names.insert(module_short_name(s.name));
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

std::string module_short_name(const std::string& module) {
    const auto dot = module.find_last_of('.');
    return dot == std::string::npos ? module : module.substr(dot + 1);
}

namespace {

using SiteIndex = std::unordered_map<std::string, const models::LinearSite*>;

// Absent modules first: an adapter for another architecture is reported as that, not as the first
// shape that happens to differ.
void check_modules_exist(const io::PeftAdapter& adapter, const SiteIndex& by_name,
                         const std::vector<models::LinearSite>& sites, const std::string& family,
                         const std::string& model_dir) {
    for (const auto& m : adapter.modules()) {
        if (!by_name.count(m.module))
            throw Error(ErrorKind::Format, adapter.weights().source_path(),
                        "adapts module '" + m.module + "', which this " + family + " model (" + model_dir +
                            ") does not have; its adaptable linears are: " + example_sites(sites) +
                            " (was the adapter trained on another architecture?)");
    }
}

// Each module's factors against its linear's shape; the modules the config targets join `v`.
void match_modules(const io::PeftAdapter& adapter, const SiteIndex& by_name, AdapterValidation& v) {
    const AdapterConfig& cfg = adapter.config();
    const std::string st_path = adapter.weights().source_path();
    const std::string prefix = io::PeftAdapter::kTensorPrefix;
    std::set<std::string> short_names;
    std::vector<std::string> untargeted;
    for (const auto& m : adapter.modules()) {
        const models::LinearSite& site = *by_name.at(m.module);
        if (m.in_features != site.in_features)
            throw Error(ErrorKind::Format, st_path,
                        "tensor '" + prefix + m.module + ".lora_A.weight' has shape " + io::shape_to_string(m.a->shape) +
                            " but module '" + m.module + "' of the loaded model takes " +
                            std::to_string(site.in_features) + " input features");
        if (m.out_features != site.out_features)
            throw Error(ErrorKind::Format, st_path,
                        "tensor '" + prefix + m.module + ".lora_B.weight' has shape " + io::shape_to_string(m.b->shape) +
                            " but module '" + m.module + "' of the loaded model has " +
                            std::to_string(site.out_features) + " output features");
        // PEFT only wraps modules its config targets; weights for any other module are ignored
        // on load (unexpected keys), so they must not be applied here either.
        const bool config_names_modules = cfg.target_modules_regex || !cfg.target_modules.empty();
        if (config_names_modules && !cfg.targets(m.module)) {
            untargeted.push_back(m.module);
            continue;
        }
        v.modules.push_back({&m, site});
        short_names.insert(module_short_name(m.module));
        v.parameters += m.a->numel() + m.b->numel();
    }
    v.targets.assign(short_names.begin(), short_names.end());
    if (!untargeted.empty())
        v.warnings.push_back(std::to_string(untargeted.size()) + " module(s) have weights but are not in target_modules "
                             "and are ignored, as PEFT ignores them (e.g. '" + untargeted.front() + "')");
}

// Targets the config names that this architecture lacks, or that the file leaves without weights.
void check_targets(const io::PeftAdapter& adapter, const std::vector<models::LinearSite>& sites,
                   const std::string& family, AdapterValidation& v) {
    const AdapterConfig& cfg = adapter.config();
    if (!cfg.target_modules.empty() && !cfg.target_modules_regex) {
        std::vector<std::string> absent;
        for (const auto& t : cfg.target_modules) {
            const bool found = std::any_of(sites.begin(), sites.end(), [&](const models::LinearSite& s) {
                return s.name == t || (s.name.size() > t.size() && s.name.compare(s.name.size() - t.size() - 1, t.size() + 1, "." + t) == 0);
            });
            if (!found) absent.push_back(t);
        }
        if (absent.size() == cfg.target_modules.size())
            throw Error(ErrorKind::Format, cfg.path,
                        "target_modules names no module of this " + family + " model (adaptable: " + example_sites(sites) + ")");
        for (const auto& t : absent)
            v.warnings.push_back("target module '" + t + "' does not exist in this " + family + " model; PEFT ignores it too");
    }
    int64_t uncovered = 0;
    std::string first_uncovered;
    for (const auto& s : sites) {
        if ((cfg.target_modules_regex || !cfg.target_modules.empty()) && cfg.targets(s.name) && !adapter.find(s.name)) {
            if (uncovered++ == 0) first_uncovered = s.name;
        }
    }
    if (uncovered > 0)
        v.warnings.push_back(std::to_string(uncovered) + " targeted module(s) have no weights in the file and stay at "
                             "the base weights (e.g. '" + first_uncovered + "')");
}

void check_base_model(const AdapterConfig& cfg, const ModelConfig& model_config, const std::string& model_dir,
                      AdapterValidation& v) {
    if (cfg.fan_in_fan_out)
        v.warnings.push_back("fan_in_fan_out is set, but these modules are nn.Linear; PEFT resets it to false and so do we");
    if (cfg.base_model_name_or_path.empty()) {
        v.warnings.push_back("adapter_config.json does not name its base model (base_model_name_or_path)");
    } else if (!same_base(cfg.base_model_name_or_path, model_config, model_dir)) {
        v.warnings.push_back("adapter was trained on '" + cfg.base_model_name_or_path + "' but the loaded model is '" +
                             (model_config.name_or_path.empty() ? model_dir : model_config.name_or_path) +
                             "'; shapes fit, outputs may still be meaningless");
    }
}

}  // namespace

AdapterValidation validate_adapter(const io::PeftAdapter& adapter, const std::vector<models::LinearSite>& sites,
                                   const ModelConfig& model_config, const std::string& model_dir) {
    const AdapterConfig& cfg = adapter.config();
    const std::string family = family_name(model_config.family);
    SiteIndex by_name;
    for (const auto& s : sites) by_name.emplace(s.name, &s);

    AdapterValidation v;
    v.rank = cfg.r;
    v.alpha = cfg.lora_alpha;
    check_modules_exist(adapter, by_name, sites, family, model_dir);
    match_modules(adapter, by_name, v);
    if (v.modules.empty())
        throw Error(ErrorKind::Format, adapter.weights().source_path(), "no LoRA weights apply to this " + family + " model");
    check_targets(adapter, sites, family, v);
    check_base_model(cfg, model_config, model_dir, v);
    return v;
}

}  // namespace lorascope::adapters
