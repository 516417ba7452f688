// PEFT LoRA adapters: their configuration (adapter_config.json), resolved the way PEFT 0.13 does,
// and what an engine reports of one it has loaded.
#pragma once

#include <cstdint>
#include <map>
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
    // How PEFT initialised the factors before training: "true", "false", "gaussian", or another
    // method's name. Only a merge with DARE's random pruning reads it: PEFT initialises the merged
    // adapter from the global generator first, as the first merged adapter's config says.
    std::string init_lora_weights = "true";

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

// Registered adapters combined into one for a request, as PEFT 0.13's
// LoraModel.add_weighted_adapter combines them (LoRAX's merged_adapters): per module, the
// adapters' A factors are merged with weights sqrt(weight * scaling), and so are their B factors;
// the merged adapter's scaling is the first adapter's config with r = lora_alpha = the common r.
//   linear       the weighted sum
//   ties         each factor keeps its `density` largest magnitudes, the sign with the larger total
//                (majority_sign_method "total") or count ("frequency") is elected per element, and
//                the weighted values that agree with it are averaged
//   dare_linear  each factor keeps a random `density` of its elements (torch.bernoulli; PEFT 0.13
//                does not rescale them), then the weighted sum
//   dare_ties    the random pruning of dare_linear, then ties' sign election and average
// One adapter is always merged linearly. Every adapter must have the same r.
enum class MergeStrategy { Linear, Ties, DareLinear, DareTies };
enum class MajoritySignMethod { Total, Frequency };
const char* to_string(MergeStrategy strategy);          // "linear", "ties", "dare_linear", "dare_ties"
const char* to_string(MajoritySignMethod method);       // "total", "frequency"

struct AdapterMerge {
    std::vector<std::string> ids;      // registered adapter names, at least one
    std::vector<double> weights;       // one per id, >= 0 (PEFT takes their square roots)
    MergeStrategy strategy = MergeStrategy::Linear;
    double density = 1.0;              // in [0, 1]; 1 prunes nothing
    MajoritySignMethod majority_sign_method = MajoritySignMethod::Total;
    // DARE's pruning draws from a generator seeded so, as torch.manual_seed(seed) right before
    // add_weighted_adapter: a merge is reproducible and equal to PEFT's.
    uint64_t seed = 0;
};

inline constexpr size_t kMaxMergedAdapters = 16;

// Parses a JSON object {"ids", "weights", "merge_strategy", "density", "majority_sign_method",
// "seed"} (LoRAX's field names; weights default to 1 each). Errors are
// ErrorKind::InvalidArgument naming `source` and the field.
AdapterMerge parse_adapter_merge(const std::string& json_object_text, const std::string& source = "merged_adapters");
// The rules parse_adapter_merge applies, for merges built another way.
void check_adapter_merge(const AdapterMerge& merge, const std::string& source = "merged_adapters");
// What PEFT's add_weighted_adapter checks before it merges, for every strategy offered here: all
// adapters have the same r. `ranks` maps adapter names to their config's r (AdapterInfo::rank);
// ids it lacks are the caller's to report. Throws Error(InvalidArgument) naming `source`, the first
// adapter whose r differs from the first adapter's, and both ranks, so that a merge that cannot be
// built is refused when it is asked for rather than when a request would run it.
void check_merge_ranks(const AdapterMerge& merge, const std::map<std::string, int64_t>& ranks,
                       const std::string& source = "merged_adapters");
// A readable name that identifies the merge: equal merges have equal names, e.g.
// merge:ties("a"*0.5,"b"*1;density=0.5;total). Engines show it in StepStats::rows_per_adapter.
std::string merge_name(const AdapterMerge& merge);

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
