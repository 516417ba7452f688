#include "adapters/adapter_merge.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "lorascope/error.h"
#include "weights/safetensors_tensor.h"

namespace lorascope::adapters {

namespace {

// ------------------------------------------------------------------- merge_utils, in ATen

at::Tensor prune_magnitude(const at::Tensor& t, double density) {
    if (density >= 1) return t;
    at::Tensor mask = at::zeros_like(t).reshape(-1);
    const auto k = static_cast<int64_t>(density * static_cast<double>(t.numel()));   // Python's int()
    const at::Tensor top = std::get<1>(at::topk(t.abs().reshape(-1), k, -1, /*largest=*/true));
    mask.index_fill_(0, top, 1);
    return t * mask.reshape(t.sizes());
}

// PEFT 0.13's random_pruning computes torch.div(pruned, density) and drops the result: the kept
// values are not rescaled, and neither are ours.
at::Tensor prune_random(const at::Tensor& t, double density, at::Generator& generator) {
    if (density >= 1) return t;
    const at::Tensor mask = at::bernoulli(at::full_like(t, density), generator);
    return t * mask;
}

at::Tensor majority_sign_mask(const at::Tensor& stacked, MajoritySignMethod method) {
    const at::Tensor sign = stacked.sign();
    const at::Tensor magnitude = method == MajoritySignMethod::Total ? stacked.sum(0) : sign.sum(0);
    const at::Tensor majority = at::where(magnitude >= 0, at::ones_like(magnitude), -at::ones_like(magnitude));
    return sign == majority;
}

at::Tensor disjoint_merge(const at::Tensor& weighted, const at::Tensor& mask) {
    const at::Tensor mixed = (weighted * mask).sum(0);
    return mixed / mask.sum(0).to(at::kFloat).clamp_min(1.0);
}

// ------------------------------------------------------------ named_modules() order per family

// Module names in the order the Hugging Face classes register them, where siblings can meet.
const std::vector<std::string>& registration_order(Family family) {
    static const std::vector<std::string> t5 = {"shared", "encoder", "decoder", "lm_head", "block", "layer",
                                                "SelfAttention", "EncDecAttention", "DenseReluDense",
                                                "q", "k", "v", "o", "wi", "wi_0", "wi_1", "wo"};
    static const std::vector<std::string> bart = {"model", "lm_head", "shared", "encoder", "decoder", "layers",
                                                  "self_attn", "encoder_attn", "fc1", "fc2",
                                                  "k_proj", "v_proj", "q_proj", "out_proj"};
    static const std::vector<std::string> bloom = {"transformer", "lm_head", "h", "self_attention", "mlp",
                                                   "query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"};
    // LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM (transformers 4.46's __init__ order).
    static const std::vector<std::string> llama = {"model", "lm_head", "embed_tokens", "layers", "norm",
                                                   "self_attn", "mlp", "input_layernorm", "post_attention_layernorm",
                                                   "q_proj", "k_proj", "v_proj", "o_proj",
                                                   "gate_proj", "up_proj", "down_proj"};
    switch (family) {
        case Family::T5: return t5;
        case Family::Bart: return bart;
        case Family::Bloom: return bloom;
        case Family::Llama: return llama;
    }
    return t5;
}

// A component's place among its siblings: layer numbers by value, known names by registration,
// anything else after them by name.
struct ComponentKey {
    int kind = 0;          // 0 number, 1 known name, 2 other
    int64_t value = 0;
    std::string name;
    bool operator<(const ComponentKey& o) const {
        if (kind != o.kind) return kind < o.kind;
        if (value != o.value) return value < o.value;
        return name < o.name;
    }
};

std::vector<ComponentKey> module_key(const std::string& module, const std::vector<std::string>& order) {
    std::vector<ComponentKey> key;
    size_t start = 0;
    while (start <= module.size()) {
        const size_t dot = std::min(module.find('.', start), module.size());
        const std::string part = module.substr(start, dot - start);
        ComponentKey c;
        const bool digits = !part.empty() && part.size() < 18 &&
                            std::all_of(part.begin(), part.end(), [](unsigned char ch) { return std::isdigit(ch); });
        const auto known = std::find(order.begin(), order.end(), part);
        if (digits) c.value = std::stoll(part);
        else if (known != order.end()) c.kind = 1, c.value = known - order.begin();
        else c.kind = 2, c.name = part;
        key.push_back(std::move(c));
        start = dot + 1;
    }
    return key;
}

// ------------------------------------------------------------------------------ the merge

struct MergeSite {
    models::LinearSite site;
    std::vector<std::pair<size_t, const ModuleBinding*>> parts;   // (constituent, its binding), merge order
};

[[noreturn]] void refuse(const AdapterMerge& merge, const std::string& why) {
    throw Error(ErrorKind::InvalidArgument, merge_name(merge), why);
}

// Every module some constituent adapts, in named_modules() order.
std::vector<MergeSite> merge_sites(const std::vector<MergeConstituent>& constituents, Family family) {
    std::map<int, MergeSite> by_id;
    for (size_t c = 0; c < constituents.size(); ++c)
        for (const ModuleBinding& b : constituents[c].validation.modules) {
            MergeSite& s = by_id[b.site.id];
            s.site = b.site;
            s.parts.emplace_back(c, &b);
        }
    std::vector<MergeSite> sites;
    std::vector<std::string> names;
    for (auto& [id, s] : by_id) {
        names.push_back(s.site.name);
        sites.push_back(std::move(s));
    }
    std::vector<MergeSite> ordered;
    for (size_t i : hf_module_order(names, family)) ordered.push_back(std::move(sites[i]));
    return ordered;
}

// What PEFT draws from the global generator while add_weighted_adapter creates the merged
// adapter's layers, before it merges anything (see the header).
void draw_layer_init(const std::vector<MergeSite>& sites, const AdapterConfig& merged, at::Generator& generator,
                     const AdapterMerge& merge) {
    const std::string& init = merged.init_lora_weights;
    if (init != "true" && init != "false" && init != "gaussian")
        refuse(merge, "DARE follows PEFT's random stream only for a first adapter whose init_lora_weights is true, false "
                      "or gaussian; '" + merge.ids.front() + "' says " + init);
    for (const MergeSite& s : sites) {
        const int64_t r = merged.rank(s.site.name);
        at::Tensor a = at::empty({r, s.site.in_features}, at::kFloat);
        a.uniform_(0, 1, generator);                                                   // nn.Linear(in, r): A
        at::empty({s.site.out_features, r}, at::kFloat).uniform_(0, 1, generator);   // nn.Linear(r, out): B
        // reset_lora_parameters: A again (kaiming_uniform_ is one uniform_), B zeroed without drawing.
        if (init == "true") a.uniform_(0, 1, generator);
        else if (init == "gaussian") a.normal_(0, 1.0 / static_cast<double>(r), generator);
    }
}

}  // namespace

at::Tensor merge_task_tensors(const std::vector<at::Tensor>& tensors, const at::Tensor& weights, MergeStrategy strategy,
                              double density, MajoritySignMethod sign_method, at::Generator& generator) {
    std::vector<at::Tensor> pruned;
    for (const at::Tensor& t : tensors) {
        if (strategy == MergeStrategy::Ties) pruned.push_back(prune_magnitude(t, density));
        else if (strategy == MergeStrategy::DareLinear || strategy == MergeStrategy::DareTies)
            pruned.push_back(prune_random(t, density, generator));
        else pruned.push_back(t);
    }
    const at::Tensor stacked = at::stack(pruned, 0);
    std::vector<int64_t> shape(static_cast<size_t>(stacked.dim()), 1);
    shape[0] = weights.size(0);
    const at::Tensor weighted = stacked * weights.view(shape);
    if (strategy == MergeStrategy::Linear || strategy == MergeStrategy::DareLinear) return weighted.sum(0);
    // Signs are elected on the pruned factors before weighting, as merge_utils.ties does.
    return disjoint_merge(weighted, majority_sign_mask(stacked, sign_method));
}

std::vector<size_t> hf_module_order(const std::vector<std::string>& modules, Family family) {
    const auto& order = registration_order(family);
    std::vector<std::vector<ComponentKey>> keys;
    for (const auto& m : modules) keys.push_back(module_key(m, order));
    std::vector<size_t> index(modules.size());
    for (size_t i = 0; i < index.size(); ++i) index[i] = i;
    std::stable_sort(index.begin(), index.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    return index;
}

MergedAdapter merge_adapters(const AdapterMerge& merge, const std::vector<MergeConstituent>& constituents,
                             const models::Model& model) {
    if (constituents.empty() || constituents.size() != merge.ids.size()) refuse(merge, "no adapters to merge");
    // PEFT merges a single adapter linearly whatever the strategy.
    const MergeStrategy strategy = constituents.size() == 1 ? MergeStrategy::Linear : merge.strategy;
    const int64_t rank = constituents.front().peft->config().r;
    for (const auto& c : constituents)
        if (c.peft->config().r != rank)
            refuse(merge, "every adapter of a merge must have the same r (as PEFT requires): '" + constituents.front().name +
                              "' has " + std::to_string(rank) + ", '" + c.name + "' " + std::to_string(c.peft->config().r));
    // add_weighted_adapter's config: the first adapter's, with r = lora_alpha = the common r.
    AdapterConfig merged = constituents.front().peft->config();
    merged.r = rank;
    merged.lora_alpha = static_cast<double>(rank);

    const std::vector<MergeSite> sites = merge_sites(constituents, model.family());
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(merge.seed);
    const bool random = (strategy == MergeStrategy::DareLinear || strategy == MergeStrategy::DareTies) && merge.density < 1;
    if (random) draw_layer_init(sites, merged, generator, merge);

    std::vector<SiteFactors> factors;
    MergedAdapter out;
    std::set<std::string> targets;
    for (const MergeSite& s : sites) {
        std::vector<at::Tensor> as, bs;
        std::vector<double> w;
        for (const auto& [c, binding] : s.parts) {
            const io::LoraModuleTensors& m = *binding->tensors;
            as.push_back(weights::tensor_from_safetensors(*m.file, *m.a, at::kFloat, at::kCPU));
            bs.push_back(weights::tensor_from_safetensors(*m.file, *m.b, at::kFloat, at::kCPU));
            if (as.back().sizes() != as.front().sizes() || bs.back().sizes() != bs.front().sizes())
                refuse(merge, "module '" + s.site.name + "' has factors of different shapes in '" + constituents[s.parts[0].first].name +
                                  "' and '" + constituents[c].name + "' (rank patterns differ)");
            w.push_back(std::sqrt(merge.weights[c] * m.scaling));   // in double, as Python's math.sqrt
        }
        const at::Tensor weights = at::tensor(w, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat);
        SiteFactors f;
        f.site_id = s.site.id;
        f.a = merge_task_tensors(as, weights, strategy, merge.density, merge.majority_sign_method, generator);
        f.b = merge_task_tensors(bs, weights, strategy, merge.density, merge.majority_sign_method, generator);
        f.scaling = merged.scaling(s.site.name);
        out.info.parameters += f.a.numel() + f.b.numel();
        targets.insert(module_short_name(s.site.name));
        factors.push_back(std::move(f));
    }
    out.weights = LoraWeights::from_factors(factors, model.linear_sites().size(), model.options());
    out.info.name = merge_name(merge);
    out.info.rank = rank;
    out.info.alpha = static_cast<double>(rank);
    out.info.targets.assign(targets.begin(), targets.end());
    out.info.bytes = out.weights->bytes();
    out.info.loaded = true;
    return out;
}

}  // namespace lorascope::adapters
