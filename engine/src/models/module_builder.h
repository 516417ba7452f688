// Builds layers from a WeightStore by Hugging Face module name, checking shapes and registering
// every linear as an adapter-targetable site.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weights/weight_store.h"
#include "models/layers.h"
#include "models/linear.h"

namespace lorascope::models {

class ModuleBuilder {
public:
    // `packing`: how CPU linears are packed at load (ops/cpu_matmul.h); none keeps ATen's path.
    // Packed tensors are released from the store as they are packed (WeightStore::release).
    ModuleBuilder(std::shared_ptr<weights::WeightStore> store, std::vector<LinearSite>& sites,
                  std::optional<ops::MatmulKind> packing = std::nullopt);

    // Throws lorascope::Error (Format) naming the file and tensor when the shape differs.
    at::Tensor tensor(const std::string& name, const std::vector<int64_t>& shape) const;
    std::optional<at::Tensor> optional_tensor(const std::string& name, const std::vector<int64_t>& shape) const;

    // `module` is the HF module path ("model.encoder.layers.0.fc1"); weight [out, in]. Packed when
    // the builder packs.
    Linear linear(const std::string& module, int64_t in, int64_t out, bool bias);
    // A linear that will be fused with its neighbours (never packed alone), and the fused result.
    Linear part(const std::string& module, int64_t in, int64_t out, bool bias);
    FusedLinear fused(const std::vector<Linear>& parts);
    // A [vocab, width] table. When an LM head built earlier by this builder reads the same tensor
    // (tied weights), the embedding reads its rows from the head's packed copy, so the table is
    // held once; otherwise a packing builder packs it for int8/bfloat16 (float32 stays as loaded).
    Embedding embedding(const std::string& name, int64_t vocab, int64_t width);
    Norm layer_norm(const std::string& module, int64_t width, double eps) const;
    Norm rms_norm(const std::string& module, int64_t width, double eps) const;

    const weights::WeightStore& store() const { return *store_; }

private:
    // The LM head and embedding tables under `packing_`: int8 when the layers are 4-bit. As
    // llama.cpp's quantizer keeps the output matrix at 6 or 8 bits in its 4-bit files: the head's
    // errors land on every logit.
    ops::MatmulKind table_kind() const;
    bool full_int8_tables() const;

    std::shared_ptr<weights::WeightStore> store_;
    std::vector<LinearSite>& sites_;
    std::optional<ops::MatmulKind> packing_;
    std::map<const void*, std::shared_ptr<const ops::CpuMatmul>> packed_by_source_;  // by store source_id: tied weights
};

}  // namespace lorascope::models
