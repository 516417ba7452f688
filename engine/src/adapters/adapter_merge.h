// Several registered adapters merged into one, as PEFT 0.13's LoraModel.add_weighted_adapter
// merges them with the strategies LoRAX offers (linear, ties, dare_linear, dare_ties; what each does:
// lorascope/adapter.h, AdapterMerge). The merge reads the adapters' own files, so its factors are
// PEFT's float32 arithmetic on the stored tensors whatever type the model computes in.
//
// DARE's random pruning: PEFT draws from torch's global generator, first while it creates the
// merged adapter's layers (nn.Linear's init of A and B at every merged module, then A again as the
// first adapter's init_lora_weights says), then one torch.bernoulli mask per factor, module by
// module in named_modules() order, A factors before B factors, adapters in the merge's order.
// merge_adapters draws the same numbers from a generator seeded with AdapterMerge::seed, so that
// torch.manual_seed(seed) before add_weighted_adapter gives the very same merged adapter.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "adapters/adapter_validation.h"
#include "adapters/lora_weights.h"
#include "io/peft.h"
#include "lorascope/adapter.h"
#include "models/model.h"

namespace lorascope::adapters {

// One adapter of a merge: its files and how they bind to the model.
struct MergeConstituent {
    std::string name;
    std::shared_ptr<io::PeftAdapter> peft;
    AdapterValidation validation;
};

struct MergedAdapter {
    std::shared_ptr<const LoraWeights> weights;
    AdapterInfo info;
};

// Throws lorascope::Error naming the merge when PEFT would refuse it (ranks differ, factors of one
// module differ in shape) or when DARE cannot follow PEFT's random stream (an init_lora_weights
// other than true, false or gaussian).
MergedAdapter merge_adapters(const AdapterMerge& merge, const std::vector<MergeConstituent>& constituents,
                             const models::Model& model);

// merge_utils' task-tensor merge of one factor of several adapters: `tensors` [n] of one shape
// (float32, CPU), `weights` float32 [n]; `generator` feeds DARE's masks.
at::Tensor merge_task_tensors(const std::vector<at::Tensor>& tensors, const at::Tensor& weights, MergeStrategy strategy,
                              double density, MajoritySignMethod sign_method, at::Generator& generator);

// The indices of `modules` (module paths of one model) in the order Hugging Face's
// named_modules() visits them for `family`.
std::vector<size_t> hf_module_order(const std::vector<std::string>& modules, Family family);

}  // namespace lorascope::adapters
