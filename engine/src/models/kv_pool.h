// Attention caches addressed by slots, in the manner of vLLM's paged attention and llama.cpp's KV
// cells: one fixed pool per layer of blocks of kBlockSize positions, a free list, and a block
// table per batch row. Joining, leaving and beam reordering are bookkeeping on block tables; the
// only copies are the newcomers' own K/V (written once, in place) and, when two beams share a
// partly filled block, that one block before the next write (copy on write). Full blocks are
// never written again, so beams share them for ever.
//
// Cross-attention K/V of seq2seq models live in the same pool (the decoder's cross heads have the
// self-attention heads' shape): written once per request by the encoder pass, shared by its beams.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace lorascope::models {

struct CacheShape {
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t head_dim = 0;
};

class KvPool {
public:
    static constexpr int64_t kBlockSize = 16;

    // `blocks` usable blocks (block 0, the null block that padding entries of a table point to, is
    // extra). A growable pool doubles when it runs out (standalone use: tests, scoring); the
    // engine's pool is fixed and admission reserves what each request may need. `options` are those
    // of the stored K/V; `compute` (default: the stored type) is the type the layers attend in:
    // what gather_*() and the masks return. A bfloat16 pool under float32 attention halves the
    // cache; writes round to it, reads widen exactly.
    KvPool(CacheShape shape, int64_t blocks, at::TensorOptions options, bool growable = false,
           std::optional<at::ScalarType> compute = std::nullopt);

    const CacheShape& shape() const { return shape_; }
    at::ScalarType storage_dtype() const { return c10::typeMetaToScalarType(options_.dtype()); }
    at::ScalarType compute_dtype() const { return compute_; }
    int64_t block_size() const { return kBlockSize; }
    int64_t capacity() const { return capacity_; }           // usable blocks
    int64_t used() const { return capacity_ - static_cast<int64_t>(free_.size()); }
    int64_t bytes_per_block() const;                        // K and V, all layers
    int64_t bytes_allocated() const { return (capacity_ + 1) * bytes_per_block(); }
    static int64_t bytes_per_block(const CacheShape& shape, at::ScalarType dtype);

    // Admission's accounting: blocks promised to admitted requests. try_reserve fails rather than
    // over-commit; allocations stay within what was reserved, so a running step never runs out.
    // A negative count, an overflow or a release of more than is reserved asserts in debug builds
    // and throws Error(Internal) in release builds.
    bool try_reserve(int64_t blocks);
    void unreserve(int64_t blocks);
    int64_t reserved() const { return reserved_; }

    int32_t allocate();                      // refcount 1; throws when full and not growable
    void retain(int32_t block);
    void release(int32_t block);
    int32_t refcount(int32_t block) const { return refs_[static_cast<size_t>(block)]; }
    void copy_block(int32_t from, int32_t to);   // every layer, K and V

    // Per layer: [capacity + 1, H, kBlockSize, D]: a head's positions in a block are contiguous, so
    // a decoding step reads each (row, head)'s keys in runs of kBlockSize x D floats.
    const at::Tensor& keys(int64_t layer) const { return keys_[static_cast<size_t>(layer)]; }
    const at::Tensor& values(int64_t layer) const { return values_[static_cast<size_t>(layer)]; }

    // Bytes copied by cache maintenance (copy on write, growth, copies between pools) since the
    // last take_bytes_moved(): what StepStats reports per step.
    int64_t take_bytes_moved();
    void add_bytes_moved(int64_t bytes) { bytes_moved_ += bytes; }

private:
    void grow();
    void zero_block(int32_t block);

    CacheShape shape_;
    at::TensorOptions options_;
    at::ScalarType compute_ = at::kFloat;
    bool growable_ = false;
    int64_t capacity_ = 0;
    int64_t reserved_ = 0;
    int64_t bytes_moved_ = 0;
    std::vector<at::Tensor> keys_, values_;
    std::vector<int32_t> refs_;
    std::vector<int32_t> free_;          // a stack: lowest block ids are handed out first
    std::vector<bool> touched_;          // zeroed once before first use (the pool is allocated empty)
};

// One row's positions: block ids in order and how many positions are valid.
struct BlockList {
    std::vector<int32_t> blocks;
    int64_t length = 0;
};

struct RowCache {
    BlockList self;    // decoder self-attention
    BlockList cross;   // seq2seq: encoder K/V for cross-attention (length = encoder length)
};

// What the layers of one forward pass read and write, built once per pass by
// DecodeState::begin_forward: where each new token's K/V goes and each row's block table.
struct PagedStep {
    KvPool* pool = nullptr;
    int64_t rows = 0;
    int64_t new_tokens = 0;                 // T of the pass
    std::vector<int64_t> past;              // self lengths before the pass
    std::vector<int64_t> visible;           // self keys each row's last new token sees: past + added
    at::Tensor write_blocks, write_offsets; // [n] long: block and offset of each valid new token ...
    at::Tensor write_rows;                  // [n] long: ... and its row in the pass's [B * T] tokens
    std::vector<int32_t> self_table;        // [rows, self_width], padded with the null block
    int64_t self_width = 0;
    std::vector<int32_t> cross_table;       // [rows, cross_width]
    int64_t cross_width = 0;
    std::vector<int64_t> cross_lengths;

    int64_t key_length = 0;                 // L of the self-attention bias: max(past) + T
    int64_t cross_length = 0;               // S of the cross-attention keys: max(cross_lengths)

    // K and V of `layer` as dense [rows, H, L, D] copies gathered through the tables (the null
    // block past a row's end), for the kernels that need them: SDPA, the matmul path, prefill,
    // devices other than the CPU. The slot index is built once per pass, on first use.
    std::pair<at::Tensor, at::Tensor> gather_self(int64_t layer) const;
    std::pair<at::Tensor, at::Tensor> gather_cross(int64_t layer) const;
    // [rows, 1, 1, S] mask of cross positions past each row's encoder length (undefined: none).
    const at::Tensor& cross_padding_mask() const;
    // Writes this pass's new K/V of `layer` (k, v [rows, H, T, D]) into their slots.
    void write(int64_t layer, const at::Tensor& k, const at::Tensor& v) const;

private:
    std::pair<at::Tensor, at::Tensor> gather(int64_t layer, const at::Tensor& blocks, int64_t L) const;
    mutable at::Tensor self_blocks_, cross_blocks_, cross_mask_;
    mutable bool cross_mask_built_ = false;
};

// What a batch keeps between steps: one RowCache per row, over a shared pool. Rows correspond to
// the batch's rows in order.
class DecodeState {
public:
    DecodeState() = default;
    explicit DecodeState(std::shared_ptr<KvPool> pool) : pool_(std::move(pool)) {}
    DecodeState(const DecodeState&) = delete;
    DecodeState& operator=(const DecodeState&) = delete;
    DecodeState(DecodeState&& other) noexcept;
    DecodeState& operator=(DecodeState&& other) noexcept;
    ~DecodeState();

    const std::shared_ptr<KvPool>& pool() const { return pool_; }
    int64_t rows() const { return static_cast<int64_t>(rows_.size()); }
    const RowCache& row(int64_t i) const { return rows_[static_cast<size_t>(i)]; }
    std::vector<int64_t> lengths() const;
    int64_t max_length() const;
    bool uniform() const;

    // Appends an empty row (no blocks).
    void add_row();
    // Seq2seq: gives rows [first, first + lengths.size()) their encoder memory of lengths[j]
    // positions and writes it: per decoder layer, keys[l] and values[l] are [n, H, S, D] (row j
    // valid in [0, lengths[j])). Only the valid positions are written.
    void write_cross(int64_t first, const std::vector<int64_t>& lengths, const std::vector<at::Tensor>& keys,
                     const std::vector<at::Tensor>& values);

    // Keeps rows `rows` in that order, repeats allowed (beams): block references only, no copy.
    void filter(const std::vector<int64_t>& rows);
    // Appends other's rows. Same pool: references move; another pool: blocks are copied (only
    // outside the engine, which has one pool).
    void concatenate(DecodeState&& other);
    void concatenate(const DecodeState& other);
    // Moves rows [begin, begin + count) out into a state of their own / back (fault isolation).
    DecodeState take(int64_t begin, int64_t count);
    void put(int64_t begin, DecodeState&& rows);
    // Drops rows [begin, begin + count): their blocks go back to the pool.
    void erase(int64_t begin, int64_t count);
    // Rows [begin, begin + n) take the blocks of rows begin + source[j] (a beam step): references
    // move inside the request only.
    void reorder(int64_t begin, const std::vector<int64_t>& source);

    // Gives every row room for `added[i]` more positions (allocating blocks, and copying a shared
    // last block first), and describes the pass for the layers. Lengths move with advance().
    PagedStep begin_forward(const std::vector<int64_t>& added, int64_t T);
    void advance(const std::vector<int64_t>& added);

    int64_t blocks_in_use() const;        // distinct blocks referenced
    int64_t bytes_allocated() const;      // blocks referenced x block bytes
    int64_t bytes_in_use() const;         // valid positions only (self and cross)

private:
    void release_row(RowCache& row);
    void retain_row(const RowCache& row);
    void make_room(BlockList& list, int64_t positions);

    std::shared_ptr<KvPool> pool_;
    std::vector<RowCache> rows_;
};

// Additive mask value: large and finite so that a fully masked row never turns into NaN.
double mask_value(at::ScalarType dtype);

}  // namespace lorascope::models
