#include "lorascope/inspect.h"

#include <set>
#include <utility>

#include "io/peft.h"
#include "io/safetensors.h"

namespace lorascope {

WeightsFacts describe_weights(const std::string& model_dir) {
    const auto ckpt = io::open_model_checkpoint(model_dir);
    WeightsFacts facts;
    facts.sharded = ckpt->sharded();
    for (const auto& shard : ckpt->shards()) facts.files.push_back({shard->path(), shard->file_bytes()});
    facts.file_bytes = ckpt->file_bytes();
    // Tied weights are stored once; two names over the same bytes would still count once.
    std::set<std::pair<const io::SafetensorsFile*, uint64_t>> seen;
    for (const auto& name : ckpt->names()) {
        const auto* e = ckpt->find(name);
        if (e->info->nbytes() > 0 && !seen.emplace(e->file, e->info->begin).second) continue;
        facts.parameters += e->info->numel();
        facts.parameters_per_dtype[io::to_string(e->info->dtype)] += e->info->numel();
    }
    facts.tensors = static_cast<int64_t>(ckpt->names().size());
    return facts;
}

AdapterFacts describe_adapter(const std::string& adapter_dir) {
    const auto adapter = io::PeftAdapter::open(adapter_dir);
    AdapterFacts facts;
    facts.directory = adapter_dir;
    facts.config = adapter->config();
    std::set<int64_t> ranks;
    std::set<std::string> leaf_names;
    for (const auto& m : adapter->modules()) {
        ranks.insert(m.rank);
        leaf_names.insert(m.module.substr(m.module.rfind('.') + 1));
    }
    facts.modules = static_cast<int64_t>(adapter->modules().size());
    facts.ranks.assign(ranks.begin(), ranks.end());
    facts.adapted_module_names.assign(leaf_names.begin(), leaf_names.end());
    facts.parameters = adapter->parameter_count();
    facts.file_bytes = adapter->file_bytes();
    return facts;
}

}  // namespace lorascope
