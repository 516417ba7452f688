// Attention caches as batch-facing objects. Every row's tokens sit left-aligned in its slots
// ([0, length) valid); rows may have different lengths, so a batch can lose rows (filter), gain
// rows (concatenate) or repeat rows (beams) without shifting anyone's data.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace lorascope::models {

struct CacheShape {
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t head_dim = 0;
};

// Decoder self-attention K/V: per layer [B, H, capacity, D], grown in chunks so that a step never
// copies the whole cache; only crossing a chunk boundary does (amortised, and avoidable with reserve).
class KvCache {
public:
    static constexpr int64_t kDefaultChunk = 64;

    KvCache() = default;
    KvCache(CacheShape shape, int64_t rows, at::TensorOptions options, int64_t chunk = kDefaultChunk);

    int64_t rows() const { return static_cast<int64_t>(lengths_.size()); }
    int64_t capacity() const { return capacity_; }
    const CacheShape& shape() const { return shape_; }
    const std::vector<int64_t>& lengths() const { return lengths_; }
    int64_t max_length() const;
    bool uniform() const;                 // every row has the same length

    // Makes room for `tokens` more positions in every row (one allocation, rounded up to chunks).
    void reserve(int64_t tokens);

    // Layer `layer` of the current step: k/v are [B, H, T, D]. Row b's positions land in slots
    // [lengths[b], lengths[b] + T). T > 1 needs uniform lengths (prefill, scoring). Returns views
    // [B, H, max_length() + T, D] for attention. Lengths move only with advance().
    std::pair<at::Tensor, at::Tensor> write(int64_t layer, const at::Tensor& k, const at::Tensor& v);
    // After all layers: row b now holds `added[b]` more valid tokens (right-padded input: fewer than T).
    void advance(const std::vector<int64_t>& added);
    void advance(int64_t added);

    // Keeps rows `rows` in that order (repeats allowed: beams); shrinks capacity to what they need.
    void filter(const std::vector<int64_t>& rows);
    // Appends other's rows after this cache's rows, padding the smaller capacity.
    void concatenate(const KvCache& other);

    int64_t bytes_allocated() const;
    int64_t bytes_in_use() const;         // valid slots only
    const at::Tensor& keys(int64_t layer) const { return keys_[layer]; }
    const at::Tensor& values(int64_t layer) const { return values_[layer]; }

private:
    void grow_to(int64_t capacity);
    int64_t round_up(int64_t n) const { return (n + chunk_ - 1) / chunk_ * chunk_; }

    CacheShape shape_;
    at::TensorOptions options_;
    int64_t chunk_ = kDefaultChunk;
    int64_t capacity_ = 0;
    std::vector<int64_t> lengths_;
    std::vector<at::Tensor> keys_, values_;
    at::Tensor scatter_index_;            // per-step slot index for rows of different lengths
};

// What the decoder reads from the encoder: each decoder layer's cross-attention K/V, computed once
// per request, and the encoder padding of each row (right-padded, so a row is valid in [0, length)).
class EncoderMemory {
public:
    EncoderMemory() = default;
    EncoderMemory(std::vector<at::Tensor> keys, std::vector<at::Tensor> values, std::vector<int64_t> lengths);

    int64_t rows() const { return static_cast<int64_t>(lengths_.size()); }
    const std::vector<int64_t>& lengths() const { return lengths_; }
    const at::Tensor& keys(int64_t layer) const { return keys_[layer]; }
    const at::Tensor& values(int64_t layer) const { return values_[layer]; }
    // Additive padding mask [B, 1, 1, S], or undefined when no row is padded.
    const at::Tensor& bias() const { return bias_; }

    void filter(const std::vector<int64_t>& rows);     // also trims padding nobody needs any more
    void concatenate(const EncoderMemory& other);
    int64_t bytes_allocated() const;

private:
    void rebuild_bias();

    std::vector<at::Tensor> keys_, values_;  // per layer [B, H, S, D]
    std::vector<int64_t> lengths_;
    at::Tensor bias_;
};

// Additive mask value: large and finite so that a fully masked row never turns into NaN.
double mask_value(at::ScalarType dtype);

}  // namespace lorascope::models
