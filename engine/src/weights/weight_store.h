// Model weights as at::Tensors, straight from memory-mapped safetensors.
// Interface shared by the I/O work (which implements it) and the models (which use it).
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/config.h"

namespace lorascope::weights {

struct WeightLoadOptions {
    // Every floating tensor is converted to this once, at load, except where Hugging Face keeps a
    // module in float32 for this dtype (T5's feed-forward "wo" in float16).
    at::ScalarType dtype = at::kFloat;
    at::Device device = at::kCPU;
    bool allow_pickle = false;          // pytorch_model.bin opt-in; refused with an explanation otherwise
    // After each checkpoint tensor is first read (safetensors): tensors read so far, of all the
    // file's; false stops the load (get throws Error(Cancelled)). See EngineOptions::load_progress.
    std::function<bool(int64_t read, int64_t total)> progress;
};

class WeightStore {
public:
    // Opens <dir>/model.safetensors or <dir>/model.safetensors.index.json (every shard validated).
    // A directory holding only pytorch_model.bin is refused (ErrorKind::Unsafe) unless allowed.
    static std::shared_ptr<WeightStore> open(const std::string& dir, const ModelConfig& config,
                                             const WeightLoadOptions& options = {});
    virtual ~WeightStore() = default;

    // Canonical names are those of Hugging Face's *ForConditionalGeneration / *ForCausalLM state dict:
    //   T5    "shared.weight", "encoder.block.0.layer.0.SelfAttention.q.weight", "lm_head.weight"
    //   BART  "model.shared.weight", "model.encoder.layers.0.self_attn.q_proj.weight", "final_logits_bias"
    //   BLOOM "transformer.word_embeddings.weight", "transformer.h.0.self_attention.query_key_value.weight"
    // Files saved from the bare base model (no "model."/"transformer." prefix) resolve too, and tied
    // weights absent from the file (lm_head, encoder/decoder embed_tokens) resolve to their source.
    virtual bool contains(const std::string& name) const = 0;
    // Throws lorascope::Error (NotFound) naming the checkpoint file and the tensor.
    virtual at::Tensor get(const std::string& name) const = 0;
    virtual std::optional<at::Tensor> get_optional(const std::string& name) const = 0;

    // Identity of the stored tensor `name` resolves to, the same for tied names (nullptr if absent).
    virtual const void* source_id(const std::string& name) const = 0;
    // For a model that has copied `name` into a form of its own (packed, quantized) and reads no
    // view of it any more: drops the store's converted copy, or hands the mapped pages back to the
    // kernel, so that load holds about one copy of the weights. A later get() reads the file again.
    virtual void release(const std::string& name) = 0;
    // The same for rows [begin, end) of a memory-mapped tensor as they are consumed; nothing for a
    // converted copy (that goes with release()).
    virtual void release_rows(const std::string& name, int64_t begin, int64_t end) = 0;
    virtual std::vector<std::string> file_tensor_names() const = 0;  // as stored, all shards
    virtual int64_t file_bytes() const = 0;                          // sum of shard sizes
    virtual const std::string& directory() const = 0;
};

}  // namespace lorascope::weights
