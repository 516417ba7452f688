#include "models/transformer_block.h"

#include "models/kv_cache.h"

namespace lorascope::models {

namespace {

template <typename Sublayer>
at::Tensor residual(NormPlacement placement, const Norm& norm, const at::Tensor& x, Sublayer&& f) {
    switch (placement) {
        case NormPlacement::Pre: return x + f(norm.forward(x));
        case NormPlacement::PreResidualFromNorm: {
            at::Tensor normed = norm.forward(x);
            return normed + f(normed);
        }
        case NormPlacement::Post: return norm.forward(x + f(x));
    }
    return x;
}

}  // namespace

at::Tensor TransformerBlock::forward(const at::Tensor& h, const at::Tensor& self_bias, KvCache* cache, int64_t layer,
                                     const EncoderMemory* memory, const LoraHook* lora) const {
    at::Tensor x = residual(placement, self_norm, h, [&](const at::Tensor& in) {
        return self_attn.forward(in, self_bias, cache, layer, lora);
    });
    if (has_cross) {
        x = residual(placement, cross_norm, x, [&](const at::Tensor& in) {
            return cross_attn.forward(in, memory->keys(layer), memory->values(layer), memory->bias(), lora);
        });
    }
    return residual(placement, ffn_norm, x, [&](const at::Tensor& in) { return ffn.forward(in, lora); });
}

}  // namespace lorascope::models
