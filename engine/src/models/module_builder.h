// Builds layers from a WeightStore by Hugging Face module name, checking shapes and registering
// every linear as an adapter-targetable site.
#pragma once

#include <ATen/ATen.h>

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
    ModuleBuilder(std::shared_ptr<io::WeightStore> store, std::vector<LinearSite>& sites);

    // Throws lorascope::Error (Format) naming the file and tensor when the shape differs.
    at::Tensor tensor(const std::string& name, const std::vector<int64_t>& shape) const;
    std::optional<at::Tensor> optional_tensor(const std::string& name, const std::vector<int64_t>& shape) const;

    // `module` is the HF module path ("model.encoder.layers.0.fc1"); weight [out, in].
    Linear linear(const std::string& module, int64_t in, int64_t out, bool bias);
    Norm layer_norm(const std::string& module, int64_t width, double eps) const;
    Norm rms_norm(const std::string& module, int64_t width, double eps) const;

    const io::WeightStore& store() const { return *store_; }

private:
    std::shared_ptr<io::WeightStore> store_;
    std::vector<LinearSite>& sites_;
};

}  // namespace lorascope::models
