// PEFT LoRA adapters: their configuration (adapter_config.json), resolved the way PEFT 0.13 does,
// and what an engine reports of one it has loaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lorascope {

struct AdapterConfig {
    std::string path;                           // adapter_config.json, for messages
    std::string peft_type = "LORA";
    std::string task_type;                      // e.g. "SEQ_2_SEQ_LM", "CAUSAL_LM"; may be empty
    std::string base_model_name_or_path;
    int64_t r = 8;
    double lora_alpha = 8;
    bool use_rslora = false;
    bool fan_in_fan_out = false;
    std::string bias = "none";                  // only "none" is accepted
    // target_modules is either a list of names (exact key or ".<name>" suffix) or one regex
    // (re.fullmatch on the module path). Empty list and no regex: PEFT's defaults were used and
    // the adapter's tensors say which modules are adapted.
    std::vector<std::string> target_modules;
    std::optional<std::string> target_modules_regex;
    std::vector<int64_t> layers_to_transform;   // with the list form only
    std::vector<std::string> layers_pattern;
    // Insertion order matters: PEFT picks the first key (rank keys, then alpha keys) matching
    // ".*\.<key>$" and looks that same key up in both maps.
    std::vector<std::pair<std::string, int64_t>> rank_pattern;
    std::vector<std::pair<std::string, double>> alpha_pattern;

    // Module paths are those of the task model's named_modules(), e.g.
    // "encoder.block.0.layer.0.SelfAttention.q" (T5), "model.encoder.layers.0.self_attn.q_proj" (BART),
    // "transformer.h.0.self_attention.query_key_value" (BLOOM).
    bool targets(const std::string& module) const;     // PEFT's check_target_module_exists
    int64_t rank(const std::string& module) const;
    double alpha(const std::string& module) const;
    double scaling(const std::string& module) const;    // alpha / r, or alpha / sqrt(r) with rsLoRA

private:
    std::optional<std::string> pattern_key(const std::string& module) const;
};

// Parses adapter_config.json. Throws lorascope::Error naming the file: NotFound when absent,
// Format when malformed, Unsupported for features Lorascope does not implement (non-LORA
// peft_type, DoRA, modules_to_save, trained biases, layer replication).
AdapterConfig parse_adapter_config(const std::string& json_text, const std::string& path_for_errors);
AdapterConfig load_adapter_config(const std::string& adapter_dir);

// An adapter as an engine holds it (Engine::load_adapter, Engine::adapters).
struct AdapterInfo {
    std::string name;
    std::string path;
    int64_t rank = 0;
    double alpha = 0;
    std::vector<std::string> targets;
    int64_t parameters = 0;
    int64_t bytes = 0;
    bool loaded = false;               // resident (false after LRU eviction)
    std::vector<std::string> warnings;
};

}  // namespace lorascope
