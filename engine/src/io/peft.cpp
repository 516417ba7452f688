#include "util/paths.h"
#include "io/peft.h"


#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "util/json_read.h"

namespace lorascope {
namespace {

using json::Json;

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Patterns come from adapter files, so they are untrusted: std::regex backtracks, and a repeated
// group that itself repeats ("(a+)+b", "(.*)*x") takes time exponential in the module name's
// length, a hang rather than an error. PEFT's published patterns repeat single atoms only
// (".*decoder.*(SelfAttention|EncDecAttention).*(q|v)$"), so nested repetition and patterns
// longer than kMaxPatternBytes are refused. An empty string when the pattern is fine.
constexpr size_t kMaxPatternBytes = 1024;

std::string pattern_too_costly(const std::string& pattern) {
    if (pattern.size() > kMaxPatternBytes)
        return "is " + std::to_string(pattern.size()) + " bytes (at most " + std::to_string(kMaxPatternBytes) + ")";
    std::vector<bool> group_repeats{false};  // per open group: whether something inside it repeats
    bool class_open = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\') {
            ++i;
            continue;
        }
        if (class_open) {
            class_open = c != ']';
            continue;
        }
        const bool quantifier = c == '*' || c == '+' || c == '{' || (c == '?' && i > 0 && pattern[i - 1] != '(');
        if (c == '[') class_open = true;
        else if (c == '(') group_repeats.push_back(false);
        else if (c == ')' && group_repeats.size() > 1) {
            const bool inner = group_repeats.back();
            group_repeats.pop_back();
            const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
            if (inner && (next == '*' || next == '+' || next == '{'))
                return "repeats a group that itself repeats (exponential backtracking)";
            if (inner) group_repeats.back() = true;
        } else if (quantifier) {
            group_repeats.back() = true;
        }
    }
    return {};
}

// Python's re and ECMAScript agree on the patterns adapters use; anything std::regex cannot
// compile is refused up front rather than silently matching nothing.
std::regex compile(const std::string& pattern, const std::string& path, const std::string& field) {
    if (const std::string why = pattern_too_costly(pattern); !why.empty())
        throw Error(ErrorKind::Unsupported, path, "'" + field + "' pattern '" + pattern.substr(0, 80) + "' " + why);
    try {
        return std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        throw Error(ErrorKind::Unsupported, path,
                    "'" + field + "' pattern '" + pattern + "' cannot be evaluated: " + e.what());
    }
}

bool full_match(const std::string& pattern, const std::string& text) {
    return std::regex_match(text, std::regex(pattern, std::regex::ECMAScript));
}

}  // namespace

std::optional<std::string> AdapterConfig::pattern_key(const std::string& module) const {
    auto matches = [&module](const std::string& key) { return full_match(".*\\." + key, module); };
    for (const auto& [key, value] : rank_pattern)
        if (matches(key)) return key;
    for (const auto& [key, value] : alpha_pattern)
        if (matches(key)) return key;
    return std::nullopt;
}

int64_t AdapterConfig::rank(const std::string& module) const {
    const auto key = pattern_key(module).value_or(module);
    for (const auto& [k, v] : rank_pattern)
        if (k == key) return v;
    return r;
}

double AdapterConfig::alpha(const std::string& module) const {
    const auto key = pattern_key(module).value_or(module);
    for (const auto& [k, v] : alpha_pattern)
        if (k == key) return v;
    return lora_alpha;
}

double AdapterConfig::scaling(const std::string& module) const {
    const double a = alpha(module);
    const double rk = static_cast<double>(rank(module));
    return use_rslora ? a / std::sqrt(rk) : a / rk;
}

bool AdapterConfig::targets(const std::string& module) const {
    if (target_modules_regex) return full_match(*target_modules_regex, module);
    if (std::find(target_modules.begin(), target_modules.end(), module) != target_modules.end()) return true;
    bool found = std::any_of(target_modules.begin(), target_modules.end(),
                             [&module](const std::string& t) { return ends_with(module, "." + t); });
    if (!found || layers_to_transform.empty()) return found;
    std::smatch m;
    bool have_index = false;
    if (layers_pattern.empty()) {
        have_index = std::regex_search(module, m, std::regex(R"(^.*\.[^.]*\.(\d+)\.)"));
    } else {
        for (const auto& p : layers_pattern) {
            if (std::regex_search(module, m, std::regex("^.*\\." + p + "\\.(\\d+)\\."))) {
                have_index = true;
                break;
            }
        }
    }
    if (!have_index) return false;
    const int64_t index = std::stoll(m[1].str());
    return std::find(layers_to_transform.begin(), layers_to_transform.end(), index) != layers_to_transform.end();
}

AdapterConfig parse_adapter_config(const std::string& json_text, const std::string& path) {
    const Json root = json::parse(json_text, path);
    json::ObjectReader r(root, path);
    AdapterConfig c;
    c.path = path;
    auto unsupported = [&path](const std::string& what) { throw Error(ErrorKind::Unsupported, path, what); };

    c.peft_type = r.get_string("peft_type", "");
    if (c.peft_type != "LORA")
        unsupported("peft_type '" + c.peft_type + "' is not supported; Lorascope loads LoRA adapters only");
    c.task_type = r.get_string("task_type", "");
    c.base_model_name_or_path = r.get_string("base_model_name_or_path", "");
    c.r = r.get_int("r", c.r);
    if (c.r <= 0) r.fail_field("r", "must be positive");
    c.lora_alpha = r.get_double("lora_alpha", c.lora_alpha);
    c.use_rslora = r.get_bool("use_rslora", c.use_rslora);
    c.fan_in_fan_out = r.get_bool("fan_in_fan_out", c.fan_in_fan_out);
    c.bias = r.get_string("bias", c.bias);
    if (const Json* init = r.find("init_lora_weights"); init && !init->is_null()) {
        if (init->is_boolean()) c.init_lora_weights = init->get<bool>() ? "true" : "false";
        else if (init->is_string()) c.init_lora_weights = init->get<std::string>();
        else r.fail_field("init_lora_weights", "must be true, false or a method's name");
    }

    if (r.get_bool("use_dora", false))
        unsupported("DoRA adapters (use_dora: true) are not supported yet");
    if (const Json* mts = r.find("modules_to_save"); mts && !(mts->is_array() && mts->empty()))
        unsupported("modules_to_save " + json_excerpt(*mts) +
                    " is not supported yet: the adapter replaces whole modules, not only LoRA weights");
    if (c.bias != "none")
        unsupported("bias '" + c.bias + "' (trained biases) is not supported yet; only \"none\"");
    if (const Json* lr = r.find("layer_replication"); lr && !(lr->is_array() && lr->empty()))
        unsupported("layer_replication is not supported");

    if (const Json* tm = r.find("target_modules")) {
        if (tm->is_string()) {
            c.target_modules_regex = tm->get<std::string>();
            compile(*c.target_modules_regex, path, "target_modules");
        } else {
            c.target_modules = r.get_string_list("target_modules");
        }
    }
    if (const Json* lt = r.find("layers_to_transform")) {
        if (lt->is_number_integer()) c.layers_to_transform.push_back(lt->get<int64_t>());
        else c.layers_to_transform = r.get_int_or_list("layers_to_transform");
    }
    if (const Json* lp = r.find("layers_pattern")) {
        if (lp->is_string()) {
            if (!lp->get<std::string>().empty()) c.layers_pattern.push_back(lp->get<std::string>());
        } else {
            c.layers_pattern = r.get_string_list("layers_pattern");
        }
    }

    // nlohmann's default object is sorted; the file order is what PEFT iterates. Re-read the
    // two pattern maps with an order-preserving parser (`root` parsed the same text within the
    // depth limit, so this parse is bounded too).
    const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(json_text);
    auto read_pattern = [&](const char* field, auto& out, bool integer) {
        auto it = ordered.find(field);
        if (it == ordered.end() || it->is_null()) return;
        if (!it->is_object()) r.fail_field(field, "must be an object of module pattern -> value");
        for (auto e = it->begin(); e != it->end(); ++e) {
            if (integer ? !e.value().is_number_integer() : !e.value().is_number())
                r.fail_field(std::string(field) + "." + e.key(), integer ? "must be an integer" : "must be a number");
            compile(".*\\." + e.key(), path, std::string(field) + "." + e.key());
            using V = typename std::decay_t<decltype(out)>::value_type::second_type;
            out.emplace_back(e.key(), e.value().template get<V>());
        }
    };
    read_pattern("rank_pattern", c.rank_pattern, true);
    read_pattern("alpha_pattern", c.alpha_pattern, false);
    for (const auto& [key, value] : c.rank_pattern)
        if (value <= 0) r.fail_field("rank_pattern." + key, "must be positive");
    return c;
}

AdapterConfig load_adapter_config(const std::string& dir) {
    const std::string path = paths::join(dir, "adapter_config.json");
    if (!paths::is_regular_file(path)) throw Error(ErrorKind::NotFound, path, "missing (not a PEFT adapter directory?)");
    return parse_adapter_config(json::read_text_file(path), path);
}

namespace io {

std::shared_ptr<PeftAdapter> PeftAdapter::open(const std::string& dir) {
    auto adapter = std::make_shared<PeftAdapter>();
    adapter->dir_ = dir;
    adapter->config_ = load_adapter_config(dir);

    const std::string st_path = paths::join(dir, "adapter_model.safetensors");
    if (!paths::is_regular_file(st_path)) {
        const std::string bin = paths::join(dir, "adapter_model.bin");
        if (paths::is_regular_file(bin))
            throw Error(ErrorKind::Unsafe, bin,
                        "refusing a pickled adapter: unpickling runs arbitrary code from the file; "
                        "save it with safe_serialization=True (adapter_model.safetensors)");
        throw Error(ErrorKind::NotFound, st_path, "missing (the adapter's weights)");
    }
    adapter->weights_ = SafetensorsCheckpoint::open_file(st_path);

    std::map<std::string, LoraModuleTensors> by_module;
    const std::string prefix = kTensorPrefix;
    for (const auto& name : adapter->weights_->names()) {
        auto fail = [&](ErrorKind kind, const std::string& why) { throw Error(kind, st_path, "tensor '" + name + "': " + why); };
        if (name.find("lora_magnitude_vector") != std::string::npos)
            fail(ErrorKind::Unsupported, "DoRA magnitude vectors are not supported yet");
        if (name.find("lora_embedding_") != std::string::npos)
            fail(ErrorKind::Unsupported, "LoRA on embedding layers is not supported yet");
        if (name.compare(0, prefix.size(), prefix) != 0)
            fail(ErrorKind::Format, "expected a name starting with '" + prefix + "'");
        const bool is_a = ends_with(name, ".lora_A.weight");
        const bool is_b = ends_with(name, ".lora_B.weight");
        const bool is_base = ends_with(name, ".base_layer.weight");
        if (is_base) {
            const std::string module = name.substr(prefix.size(), name.size() - prefix.size() - std::string(".base_layer.weight").size());
            const auto* entry = adapter->weights_->find(name);
            auto& m = by_module[module];
            m.module = module;
            m.base_weight = entry->info;
            continue;
        }
        if (!is_a && !is_b) {
            if (ends_with(name, ".bias")) fail(ErrorKind::Unsupported, "trained biases are not supported yet");
            fail(ErrorKind::Unsupported, "unexpected tensor; only <module>.lora_A.weight / lora_B.weight are supported");
        }
        const std::string module = name.substr(prefix.size(), name.size() - prefix.size() - std::string(".lora_A.weight").size());
        const auto* entry = adapter->weights_->find(name);
        const TensorInfo& info = *entry->info;
        if (info.shape.size() != 2) fail(ErrorKind::Format, "expected a 2-D tensor, got shape " + shape_to_string(info.shape));
        if (!is_floating(info.dtype)) fail(ErrorKind::Format, std::string("expected a floating dtype, got ") + to_string(info.dtype));
        auto& m = by_module[module];
        m.module = module;
        m.file = entry->file;
        (is_a ? m.a : m.b) = &info;
    }
    if (by_module.empty()) throw Error(ErrorKind::Format, st_path, "holds no lora_A/lora_B tensors");

    const AdapterConfig& cfg = adapter->config_;
    for (auto& [module, m] : by_module) {
        const std::string base = prefix + module;
        if (!m.a && !m.b)
            throw Error(ErrorKind::Format, st_path,
                        "tensor '" + base + ".base_layer.weight' belongs to no LoRA module (no lora_A/lora_B)");
        if (!m.a) throw Error(ErrorKind::Format, st_path, "tensor '" + base + ".lora_B.weight' has no matching lora_A.weight");
        if (!m.b) throw Error(ErrorKind::Format, st_path, "tensor '" + base + ".lora_A.weight' has no matching lora_B.weight");
        m.rank = m.a->shape[0];
        m.in_features = m.a->shape[1];
        m.out_features = m.b->shape[0];
        if (m.b->shape[1] != m.rank)
            throw Error(ErrorKind::Format, st_path,
                        "tensor '" + base + ".lora_B.weight' has shape " + shape_to_string(m.b->shape) +
                            " but lora_A's rank is " + std::to_string(m.rank));
        const int64_t expected = cfg.rank(module);
        if (m.rank != expected)
            throw Error(ErrorKind::Format, st_path,
                        "tensor '" + base + ".lora_A.weight' has rank " + std::to_string(m.rank) +
                            " but adapter_config.json gives r=" + std::to_string(expected) + " for this module");
        m.scaling = cfg.scaling(module);
        adapter->by_module_.emplace(module, adapter->modules_.size());
        adapter->modules_.push_back(m);
    }
    return adapter;
}

const LoraModuleTensors* PeftAdapter::find(const std::string& module) const {
    auto it = by_module_.find(module);
    return it == by_module_.end() ? nullptr : &modules_[it->second];
}

int64_t PeftAdapter::parameter_count() const {
    int64_t total = 0;
    for (const auto& m : modules_) total += m.a->numel() + m.b->numel();
    return total;
}

}  // namespace io
}  // namespace lorascope
