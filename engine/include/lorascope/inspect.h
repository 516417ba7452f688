// Facts about a model's weights and a PEFT adapter as they lie on disk, for `lorascope-cli info`
// and the window's model panel. Torch-free (lorascope_core): nothing is loaded, files are only
// mapped and their headers read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lorascope/adapter.h"

namespace lorascope {

struct WeightFile {
    std::string path;
    uint64_t bytes = 0;
};

struct WeightsFacts {
    std::string format = "safetensors";
    bool sharded = false;                     // an index file names the shards
    std::vector<WeightFile> files;            // model.safetensors, or every shard in index order
    uint64_t file_bytes = 0;                  // sum over files
    int64_t tensors = 0;                      // stored names, all shards
    // Elements of the stored tensors; tied weights stored once under two names count once.
    int64_t parameters = 0;
    std::map<std::string, int64_t> parameters_per_dtype;  // safetensors spelling ("F32", "BF16") -> parameters
};

// <dir>/model.safetensors or <dir>/model.safetensors.index.json, every shard validated. Throws
// lorascope::Error naming the file: NotFound without weights, Unsafe for a pickle-only directory.
WeightsFacts describe_weights(const std::string& model_dir);

struct AdapterFacts {
    std::string directory;
    AdapterConfig config;                       // adapter_config.json, resolved
    int64_t modules = 0;                        // adapted modules (lora_A/lora_B pairs)
    std::vector<int64_t> ranks;                 // distinct ranks, ascending
    std::vector<std::string> adapted_module_names;  // distinct last path components ("q", "v"), sorted
    int64_t parameters = 0;                     // lora_A + lora_B elements
    uint64_t file_bytes = 0;                    // adapter_model.safetensors
};

// Opens and checks the adapter on its own (config and tensors agree); whether it fits a model is
// AdapterValidator's question (lorascope/model_check.h). Throws lorascope::Error naming the file.
AdapterFacts describe_adapter(const std::string& adapter_dir);

}  // namespace lorascope
