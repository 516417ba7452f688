#include "models/module_builder.h"

#include <sstream>

#include "lorascope/error.h"

namespace lorascope::models {

namespace {

std::string shape_text(at::IntArrayRef shape) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
    out << "]";
    return out.str();
}

}  // namespace

ModuleBuilder::ModuleBuilder(std::shared_ptr<weights::WeightStore> store, std::vector<LinearSite>& sites,
                             std::optional<ops::MatmulKind> packing)
    : store_(std::move(store)), sites_(sites), packing_(packing) {}

std::optional<at::Tensor> ModuleBuilder::optional_tensor(const std::string& name,
                                                         const std::vector<int64_t>& shape) const {
    std::optional<at::Tensor> t = store_->get_optional(name);
    if (t && t->sizes() != at::IntArrayRef(shape))
        throw Error(ErrorKind::Format, store_->directory(),
                    "tensor '" + name + "' has shape " + shape_text(t->sizes()) + ", config.json implies " +
                        shape_text(shape));
    return t;
}

at::Tensor ModuleBuilder::tensor(const std::string& name, const std::vector<int64_t>& shape) const {
    std::optional<at::Tensor> t = optional_tensor(name, shape);
    if (!t) return store_->get(name);  // throws NotFound with the checkpoint's own wording
    return *t;
}

Linear ModuleBuilder::linear(const std::string& module, int64_t in, int64_t out, bool bias) {
    Linear layer = part(module, in, out, bias);
    if (!packing_) return layer;
    const std::string name = module + ".weight";
    const bool table = module == "lm_head";
    layer.pack(table ? table_kind() : *packing_, [&](int64_t begin, int64_t end) { store_->release_rows(name, begin, end); },
               table && full_int8_tables());
    packed_by_source_[store_->source_id(name)] = layer.packed();
    store_->release(name);
    return layer;
}

FusedLinear ModuleBuilder::fused(const std::vector<Linear>& parts) {
    FusedLinear layer(parts);
    if (!packing_) return layer;
    layer.pack(*packing_);
    for (const auto& part : parts) store_->release(part.site().name + ".weight");
    return layer;
}

Embedding ModuleBuilder::embedding(const std::string& name, int64_t vocab, int64_t width) {
    auto tied = packed_by_source_.find(store_->source_id(name));
    if (tied != packed_by_source_.end()) return Embedding(tied->second);
    at::Tensor table = tensor(name, {vocab, width});
    if (packing_ && *packing_ != ops::MatmulKind::Float32) {
        Embedding e(std::make_shared<const ops::CpuMatmul>(
            table, at::Tensor(), table_kind(), [&](int64_t begin, int64_t end) { store_->release_rows(name, begin, end); },
            full_int8_tables()));
        table = at::Tensor();
        store_->release(name);
        return e;
    }
    return Embedding(table);
}

ops::MatmulKind ModuleBuilder::table_kind() const {
    return *packing_ == ops::MatmulKind::Int4 ? ops::MatmulKind::Int8 : *packing_;
}

// A 4-bit model's int8 tables keep all 8 bits on every CPU: with the 7 bits of the plain AVX2
// kernel the demo pack's T5 lost 2 more of 50 held-out answers under int4 (0.98 -> 0.94), past the
// 0.02 it may lose.
bool ModuleBuilder::full_int8_tables() const { return *packing_ == ops::MatmulKind::Int4; }

Linear ModuleBuilder::part(const std::string& module, int64_t in, int64_t out, bool bias) {
    LinearSite site;
    site.name = module;
    site.id = static_cast<int>(sites_.size());
    at::Tensor w = tensor(module + ".weight", {out, in});
    at::Tensor b = bias ? tensor(module + ".bias", {out}) : at::Tensor();
    Linear layer(site, w, b);
    sites_.push_back(layer.site());
    return layer;
}

Norm ModuleBuilder::layer_norm(const std::string& module, int64_t width, double eps) const {
    return Norm(Norm::Kind::Layer, tensor(module + ".weight", {width}), tensor(module + ".bias", {width}), eps);
}

Norm ModuleBuilder::rms_norm(const std::string& module, int64_t width, double eps) const {
    return Norm(Norm::Kind::Rms, tensor(module + ".weight", {width}), at::Tensor(), eps);
}

}  // namespace lorascope::models
