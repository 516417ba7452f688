#include "models/attention.h"

#include <torch/version.h>

#include <cstdlib>
#include <cstring>

#include "models/kv_pool.h"
#include "models/rotary.h"
#include "ops/single_query_attention.h"

// scaled_dot_product_attention with an explicit `scale` exists from LibTorch 2.1 on; Debian's 1.13
// has neither, so it keeps the matmul/softmax path below.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define LORASCOPE_HAVE_SDPA 1
#else
#define LORASCOPE_HAVE_SDPA 0
#endif

namespace lorascope::models {

namespace {

// [B, T, H*D] columns starting at `offset` -> [B, H, T, D] (a view).
at::Tensor heads_view(const at::Tensor& y, int64_t offset, int64_t heads, int64_t head_dim) {
    const int64_t B = y.size(0), T = y.size(1);
    return y.narrow(2, offset, heads * head_dim).view({B, T, heads, head_dim}).transpose(1, 2);
}

// [B, Hkv, L, D] -> [B, Hkv * group, L, D], each key/value head repeated for its query group (HF's repeat_kv).
at::Tensor repeat_heads(const at::Tensor& t, int64_t group) {
    if (group == 1) return t;
    const int64_t B = t.size(0), Hkv = t.size(1), L = t.size(2), D = t.size(3);
    return t.unsqueeze(2).expand({B, Hkv, group, L, D}).reshape({B, Hkv * group, L, D});
}

}  // namespace

#if LORASCOPE_HAVE_SDPA
namespace {

// LORASCOPE_ATTENTION=math forces the explicit path (to compare kernels, or to rule SDPA out when a
// parity check fails); read once, since attend() runs per layer and step.
bool sdpa_enabled() {
    static const bool enabled = [] {
        const char* choice = std::getenv("LORASCOPE_ATTENTION");
        return !(choice && std::strcmp(choice, "math") == 0);
    }();
    return enabled;
}

}  // namespace
#endif

at::Tensor attend(const at::Tensor& q, const at::Tensor& k_heads, const at::Tensor& v_heads, const at::Tensor& bias,
                  double score_scale, const std::vector<int64_t>* valid) {
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
    const at::Tensor k = repeat_heads(k_heads, H / k_heads.size(1));
    const at::Tensor v = repeat_heads(v_heads, H / v_heads.size(1));
    // A CPU float32 decoding step takes the single-query kernel on every LibTorch, so CPU decoding is
    // the same code whichever LibTorch the build found; SDPA covers the device, half precision, prefill.
    if (T == 1 && ops::single_query_attention_applies(q, k, v))
        return ops::attend_single_query(q, k, v, bias, score_scale, valid);
#if LORASCOPE_HAVE_SDPA
    if (sdpa_enabled()) {
        // Every position rule (T5 buckets, ALiBi, causal and padding masks) is already an additive bias,
        // which SDPA takes as attn_mask; it must share the query's dtype. The scale is always explicit:
        // SDPA's default 1/sqrt(D) is wrong for T5 (1) and for BART (q pre-scaled).
        c10::optional<at::Tensor> mask;
        if (bias.defined()) mask = bias.scalar_type() == q.scalar_type() ? bias : bias.to(q.scalar_type());
        at::Tensor out = at::scaled_dot_product_attention(q, k, v, mask, /*dropout_p=*/0.0, /*is_causal=*/false,
                                                          /*scale=*/score_scale);
        return out.transpose(1, 2).reshape({B, T, H * D});
    }
#endif
    at::Tensor scores = at::matmul(q, k.transpose(-1, -2));  // [B, H, T, L]
    if (score_scale != 1.0) scores.mul_(score_scale);
    if (bias.defined()) scores.add_(bias);
    at::Tensor probs = scores.scalar_type() == at::kFloat ? at::softmax(scores, -1)
                                                          : at::softmax(scores, -1, at::kFloat).to(v.scalar_type());
    return at::matmul(probs, v).transpose(1, 2).reshape({B, T, H * D});
}

SelfAttention::SelfAttention(AttentionShape shape, QkvLayout layout, Linear qkv, Linear out)
    : shape_(shape), layout_(layout), qkv_single_(std::move(qkv)), out_(std::move(out)) {}

SelfAttention::SelfAttention(AttentionShape shape, FusedLinear qkv, Linear out)
    : shape_(shape), layout_(QkvLayout::Concatenated), qkv_fused_(std::move(qkv)), out_(std::move(out)) {}

at::Tensor SelfAttention::forward(const at::Tensor& x, const at::Tensor& bias, const PagedStep* step, int64_t layer,
                                  const LoraHook* lora, const RotaryTables* rotary) const {
    const int64_t H = shape_.heads, Hkv = shape_.key_value_heads(), D = shape_.head_dim;
    const int64_t B = x.size(0), T = x.size(1);
    at::Tensor q, k, v;
    if (layout_ == QkvLayout::PerHead) {
        at::Tensor fused = qkv_single_.forward(x, lora).view({B, T, H, 3, D});
        q = fused.select(3, 0).transpose(1, 2);
        k = fused.select(3, 1).transpose(1, 2);
        v = fused.select(3, 2).transpose(1, 2);
    } else {
        at::Tensor fused = qkv_fused_.forward(x, lora);
        q = heads_view(fused, 0, H, D);
        k = heads_view(fused, H * D, Hkv, D);
        v = heads_view(fused, (H + Hkv) * D, Hkv, D);
    }
    if (rotary) {
        q = rotary->apply(q);
        k = rotary->apply(k);
    }
    if (shape_.query_scale != 1.0) q = q * shape_.query_scale;
    if (!step) return out_.forward(attend(q, k, v, bias, shape_.score_scale), lora);
    step->write(layer, k, v);
    // A decoding step on the CPU reads each row's keys in place through its block table, and only
    // its own [0, past + 1): the causal mask hides the rest, so the kernel need not read it.
    const at::Tensor& pool_k = step->pool->keys(layer);
    if (T == 1 && ops::paged_single_query_applies(q, pool_k)) {
        return out_.forward(ops::attend_single_query_paged(q, pool_k, step->pool->values(layer), step->self_table,
                                                      step->self_width, step->pool->block_size(), step->visible,
                                                      step->key_length, bias, shape_.score_scale),
                            lora);
    }
    std::tie(k, v) = step->gather_self(layer);
    std::vector<int64_t> valid;
    if (T == 1) valid = step->visible;
    return out_.forward(attend(q, k, v, bias, shape_.score_scale, valid.empty() ? nullptr : &valid), lora);
}

CrossAttention::CrossAttention(AttentionShape shape, Linear q, FusedLinear kv, Linear out)
    : shape_(shape), q_(std::move(q)), kv_(std::move(kv)), out_(std::move(out)) {}

std::pair<at::Tensor, at::Tensor> CrossAttention::project_memory(const at::Tensor& encoder_out,
                                                                 const LoraHook* lora) const {
    const int64_t H = shape_.heads, D = shape_.head_dim;
    at::Tensor kv = kv_.forward(encoder_out, lora);
    return {heads_view(kv, 0, H, D).contiguous(), heads_view(kv, H * D, H, D).contiguous()};
}

at::Tensor CrossAttention::forward(const at::Tensor& x, const PagedStep& step, int64_t layer,
                                   const LoraHook* lora) const {
    at::Tensor q = heads_view(q_.forward(x, lora), 0, shape_.heads, shape_.head_dim);
    if (shape_.query_scale != 1.0) q = q * shape_.query_scale;
    const at::Tensor& pool_k = step.pool->keys(layer);
    if (q.size(2) == 1 && ops::paged_single_query_applies(q, pool_k)) {
        return out_.forward(ops::attend_single_query_paged(q, pool_k, step.pool->values(layer), step.cross_table,
                                                      step.cross_width, step.pool->block_size(), step.cross_lengths,
                                                      step.cross_length, at::Tensor(), shape_.score_scale),
                            lora);
    }
    auto [k, v] = step.gather_cross(layer);
    return out_.forward(attend(q, k, v, step.cross_padding_mask(), shape_.score_scale, &step.cross_lengths), lora);
}

}  // namespace lorascope::models
