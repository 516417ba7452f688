// A PEFT adapter directory: adapter_config.json and adapter_model.safetensors (parts: config, then
// weights), checked the torch-free way PeftAdapter::open checks them (every lora_A has its lora_B,
// ranks agree with r and rank_pattern, 2-D floating tensors). Then its target, rank and alpha rules
// are resolved against the module paths of the three families, as attaching it to a model does.
// (The shape check against the model's linears, adapters/adapter_validation.cpp, needs the model's
// LinearSite list, which only a LibTorch model builds; it is not fuzzed here.)
#include <cmath>
#include <cstdlib>

#include "fuzz_support.h"
#include "io/peft.h"

using namespace lorascope;

namespace {

const char* const kModules[] = {
    "encoder.block.0.layer.0.SelfAttention.q",   "decoder.block.1.layer.1.EncDecAttention.v",
    "encoder.block.0.layer.1.DenseReluDense.wi", "lm_head",
    "model.encoder.layers.0.self_attn.q_proj",   "model.decoder.layers.1.fc2",
    "transformer.h.0.self_attention.query_key_value", "transformer.h.12.mlp.dense_4h_to_h",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 2);
    const std::string dir = fuzz::write_parts(parts, {"adapter_config.json", "adapter_model.safetensors"});
    LORASCOPE_FUZZ_PARSE({
        const auto adapter = io::PeftAdapter::open(dir);
        const AdapterConfig& config = adapter->config();
        for (const auto& m : adapter->modules()) {
            if (!m.a || !m.b || m.rank <= 0) std::abort();
            (void)config.targets(m.module);
        }
        for (const char* module : kModules) {
            (void)config.targets(module);
            (void)config.rank(module);
            (void)config.scaling(module);
        }
        (void)adapter->parameter_count();
    });
    return 0;
}
