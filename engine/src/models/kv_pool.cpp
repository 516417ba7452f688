#include "models/kv_pool.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "lorascope/error.h"
#include "ops/quantize.h"
#include "ops/thread_pool.h"
#include "util/checked_math.h"

namespace lorascope::models {

namespace {

constexpr int64_t kBs = KvPool::kBlockSize;

int64_t blocks_for(int64_t positions) { return (positions + kBs - 1) / kBs; }

at::Tensor long_tensor(const std::vector<int64_t>& v, const at::Device& device) {
    at::Tensor t = at::tensor(v, at::TensorOptions().dtype(at::kLong));
    return device.is_cpu() ? t : t.to(device);
}

// Block ids [rows, nb] covering positions [0, nb * kBs) of each row (the null block past its table).
at::Tensor table_blocks(const std::vector<int32_t>& table, int64_t width, int64_t rows, int64_t nb,
                        const at::Device& device) {
    std::vector<int64_t> ids(static_cast<size_t>(rows * nb), 0);
    for (int64_t b = 0; b < rows; ++b)
        for (int64_t j = 0; j < std::min(nb, width); ++j)
            ids[static_cast<size_t>(b * nb + j)] = table[static_cast<size_t>(b * width + j)];
    return long_tensor(ids, device).view({rows, nb});
}

}  // namespace

double mask_value(at::ScalarType dtype) {
    switch (dtype) {
        case at::kHalf: return -65504.0;
        case at::kBFloat16: return -3.3895313892515355e38;  // torch.finfo(bfloat16).min exactly: -3.38953139e38 overflows it
        default: return static_cast<double>(std::numeric_limits<float>::lowest());
    }
}

// ---------------------------------------------------------------------------------------------- KvPool

int64_t KvPool::bytes_per_block(const CacheShape& shape, at::ScalarType dtype) {
    return 2 * shape.layers * kBs * shape.heads * shape.head_dim * static_cast<int64_t>(c10::elementSize(dtype));
}

int64_t KvPool::bytes_per_block() const {
    return bytes_per_block(shape_, c10::typeMetaToScalarType(options_.dtype()));
}

KvPool::KvPool(CacheShape shape, int64_t blocks, at::TensorOptions options, bool growable,
               std::optional<at::ScalarType> compute)
    : shape_(shape),
      options_(options),
      compute_(compute.value_or(c10::typeMetaToScalarType(options.dtype()))),
      growable_(growable),
      capacity_(std::max<int64_t>(1, blocks)) {
    // Allocated empty, zeroed a block at a time on first use: a large CPU allocation is fresh
    // pages that cost no memory until written, so an idle budget of gigabytes stays virtual.
    for (int64_t l = 0; l < shape_.layers; ++l) {
        keys_.push_back(at::empty({capacity_ + 1, shape_.heads, kBs, shape_.head_dim}, options_));
        values_.push_back(at::empty({capacity_ + 1, shape_.heads, kBs, shape_.head_dim}, options_));
    }
    refs_.assign(static_cast<size_t>(capacity_ + 1), 0);
    touched_.assign(static_cast<size_t>(capacity_ + 1), false);
    for (int64_t b = capacity_; b >= 1; --b) free_.push_back(static_cast<int32_t>(b));
    zero_block(0);  // the null block: what padding entries of a block table read
}

void KvPool::zero_block(int32_t block) {
    for (int64_t l = 0; l < shape_.layers; ++l) {
        keys_[static_cast<size_t>(l)].select(0, block).zero_();
        values_[static_cast<size_t>(l)].select(0, block).zero_();
    }
    touched_[static_cast<size_t>(block)] = true;
}

void KvPool::grow() {
    const int64_t old = capacity_;
    const int64_t grown = std::max<int64_t>(4, old * 2);
    for (int64_t l = 0; l < shape_.layers; ++l) {
        for (auto* store : {&keys_, &values_}) {
            at::Tensor fresh = at::empty({grown + 1, shape_.heads, kBs, shape_.head_dim}, options_);
            fresh.narrow(0, 0, old + 1).copy_((*store)[static_cast<size_t>(l)]);
            (*store)[static_cast<size_t>(l)] = fresh;
        }
    }
    bytes_moved_ += used() * bytes_per_block();
    capacity_ = grown;
    refs_.resize(static_cast<size_t>(grown + 1), 0);
    touched_.resize(static_cast<size_t>(grown + 1), false);
    for (int64_t b = grown; b > old; --b) free_.insert(free_.begin(), static_cast<int32_t>(b));
}

// A negative or overflowing reservation is a bug upstream (admission refuses malformed demands):
// debug builds stop at it, release builds refuse it with an error. Clamping, as before, hid a
// negative reservation that then admitted nothing for good (issue 26).
bool KvPool::try_reserve(int64_t blocks) {
    const auto total = util::checked_add(reserved_, blocks);
    assert(blocks >= 0 && total && "a negative or overflowing KV reservation");
    if (blocks < 0 || !total)
        throw Error(ErrorKind::Internal, "KV cache accounting: cannot reserve " + std::to_string(blocks) + " blocks");
    if (!growable_ && *total > capacity_) return false;
    reserved_ = *total;
    return true;
}

void KvPool::unreserve(int64_t blocks) {
    assert(blocks >= 0 && blocks <= reserved_ && "a KV release of blocks that were not reserved");
    if (blocks < 0 || blocks > reserved_)
        throw Error(ErrorKind::Internal, "KV cache accounting: cannot release " + std::to_string(blocks) + " blocks of " +
                                             std::to_string(reserved_) + " reserved");
    reserved_ -= blocks;
}

int32_t KvPool::allocate() {
    if (free_.empty()) {
        if (!growable_)
            throw Error(ErrorKind::Internal, "the KV cache pool is full (" + std::to_string(capacity_) +
                                                 " blocks): admission reserved less than the batch uses");
        grow();
    }
    const int32_t block = free_.back();
    free_.pop_back();
    if (!touched_[static_cast<size_t>(block)]) zero_block(block);
    refs_[static_cast<size_t>(block)] = 1;
    return block;
}

void KvPool::retain(int32_t block) {
    if (block > 0) ++refs_[static_cast<size_t>(block)];
}

void KvPool::release(int32_t block) {
    if (block <= 0) return;
    int32_t& r = refs_[static_cast<size_t>(block)];
    if (r > 0 && --r == 0) free_.push_back(block);
}

void KvPool::copy_block(int32_t from, int32_t to) {
    for (int64_t l = 0; l < shape_.layers; ++l) {
        for (auto* store : {&keys_, &values_}) {
            at::Tensor& t = (*store)[static_cast<size_t>(l)];
            t.select(0, to).copy_(t.select(0, from));
        }
    }
    bytes_moved_ += bytes_per_block();
}

int64_t KvPool::take_bytes_moved() { return std::exchange(bytes_moved_, 0); }

// ------------------------------------------------------------------------------------------- PagedStep

std::pair<at::Tensor, at::Tensor> PagedStep::gather_self(int64_t layer) const {
    if (!self_blocks_.defined())
        self_blocks_ = table_blocks(self_table, self_width, rows, blocks_for(key_length), pool->keys(0).device());
    return gather(layer, self_blocks_, key_length);
}

std::pair<at::Tensor, at::Tensor> PagedStep::gather_cross(int64_t layer) const {
    if (!cross_blocks_.defined())
        cross_blocks_ = table_blocks(cross_table, cross_width, rows, blocks_for(cross_length), pool->keys(0).device());
    return gather(layer, cross_blocks_, cross_length);
}

const at::Tensor& PagedStep::cross_padding_mask() const {
    if (!cross_mask_built_) {
        const auto& keys = pool->keys(0);
        if (!std::all_of(cross_lengths.begin(), cross_lengths.end(), [&](int64_t n) { return n == cross_length; })) {
            at::Tensor len = long_tensor(cross_lengths, keys.device());
            at::Tensor slots = at::arange(cross_length, at::TensorOptions().dtype(at::kLong).device(keys.device()));
            at::Tensor hidden = (slots.unsqueeze(0) >= len.unsqueeze(1)).view({rows, 1, 1, cross_length});
            cross_mask_ = at::zeros({rows, 1, 1, cross_length}, keys.options().dtype(pool->compute_dtype()))
                              .masked_fill_(hidden, mask_value(pool->compute_dtype()));
        }
        cross_mask_built_ = true;
    }
    return cross_mask_;
}

std::pair<at::Tensor, at::Tensor> PagedStep::gather(int64_t layer, const at::Tensor& blocks, int64_t L) const {
    const int64_t B = blocks.size(0), nb = blocks.size(1);
    const auto& shape = pool->shape();
    const at::Tensor flat = blocks.reshape({-1});
    auto dense = [&](const at::Tensor& store) {  // [B * nb, H, bs, D] -> [B, H, L, D]
        return store.index_select(0, flat)
            .view({B, nb, shape.heads, kBs, shape.head_dim})
            .permute({0, 2, 1, 3, 4})
            .reshape({B, shape.heads, nb * kBs, shape.head_dim})
            .narrow(2, 0, L)
            .to(pool->compute_dtype());  // no copy when the pool stores the compute type
    };
    return {dense(pool->keys(layer)), dense(pool->values(layer))};
}

namespace {

// write()'s CPU path: each new token's H x D values from `src` [B, T, H, D] (as a strided view
// [B, H, T, D]) straight into its slot of `dst` [blocks, H, kBs, D], float32 or rounded to
// bfloat16, tokens split over our pool's threads. ATen's index_put_ (after a transposing copy and
// a conversion) ran on the engine thread alone where the products run on our pool: 0.14 s of W2's
// 3.6 s in int8 on the 2-core Zen 4. Same values: a copy, or the same round-to-nearest-even.
bool slots_writable_on_cpu(const at::Tensor& src, const at::Tensor& dst) {
    return src.device().is_cpu() && dst.device().is_cpu() && src.scalar_type() == at::kFloat && src.dim() == 4 &&
           src.stride(3) == 1 && dst.is_contiguous() &&
           (dst.scalar_type() == at::kFloat || dst.scalar_type() == at::kBFloat16);
}

void write_slots_on_cpu(const at::Tensor& src, const at::Tensor& dst, const at::Tensor& blocks,
                        const at::Tensor& offsets, const at::Tensor& rows) {
    const int64_t T = src.size(2), H = src.size(1), D = src.size(3), n = blocks.size(0);
    const float* base = src.data_ptr<float>();
    const int64_t* block = blocks.data_ptr<int64_t>();
    const int64_t* offset = offsets.data_ptr<int64_t>();
    const int64_t* row = rows.data_ptr<int64_t>();
    const bool bf16 = dst.scalar_type() == at::kBFloat16;
    uint8_t* out = static_cast<uint8_t*>(dst.data_ptr());
    const int64_t elem = bf16 ? 2 : 4;
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(H * D, 1));
    ops::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float* token = base + row[i] / T * src.stride(0) + row[i] % T * src.stride(2);
            for (int64_t h = 0; h < H; ++h) {
                const float* from = token + h * src.stride(1);
                uint8_t* to = out + (((block[i] * H + h) * kBs + offset[i]) * D) * elem;
                if (bf16)
                    ops::to_bf16_rows(from, 1, D, D, reinterpret_cast<uint16_t*>(to));
                else
                    std::memcpy(to, from, static_cast<size_t>(D) * sizeof(float));
            }
        }
    });
}

}  // namespace

void PagedStep::write(int64_t layer, const at::Tensor& k, const at::Tensor& v) const {
    const auto& shape = pool->shape();
    if (slots_writable_on_cpu(k, pool->keys(layer)) && slots_writable_on_cpu(v, pool->values(layer))) {
        write_slots_on_cpu(k, pool->keys(layer), write_blocks, write_offsets, write_rows);
        write_slots_on_cpu(v, pool->values(layer), write_blocks, write_offsets, write_rows);
        return;
    }
    auto rows_of = [&](const at::Tensor& t) {
        at::Tensor flat = t.transpose(1, 2).reshape({-1, shape.heads, shape.head_dim});  // [B * T, H, D]
        if (write_rows.size(0) == flat.size(0)) return flat;  // every new token valid, in order
        return flat.index_select(0, write_rows);
    };
    // index_put_ on the pool tensor itself: at::Tensor is a handle, the pool's storage is shared.
    // The pool is [blocks, H, kBs, D]: position (block, offset) of every head at once.
    // As pool[blocks, :, offsets]; tensor indices with an empty one for the full dimension, not
    // at::indexing::TensorIndex, whose copies read an uninitialised bool (UBSan, LibTorch 1.13).
    at::Tensor keys = pool->keys(layer), values = pool->values(layer);
    const c10::List<c10::optional<at::Tensor>> at_slot({write_blocks, c10::nullopt, write_offsets});
    keys.index_put_(at_slot, rows_of(k).to(keys.scalar_type()));
    values.index_put_(at_slot, rows_of(v).to(values.scalar_type()));
}

// ----------------------------------------------------------------------------------------- DecodeState

DecodeState::DecodeState(DecodeState&& other) noexcept : pool_(std::move(other.pool_)), rows_(std::move(other.rows_)) {
    other.rows_.clear();
}

DecodeState& DecodeState::operator=(DecodeState&& other) noexcept {
    if (this != &other) {
        for (auto& r : rows_) release_row(r);
        pool_ = std::move(other.pool_);
        rows_ = std::move(other.rows_);
        other.rows_.clear();
    }
    return *this;
}

DecodeState::~DecodeState() {
    for (auto& r : rows_) release_row(r);
}

void DecodeState::release_row(RowCache& row) {
    if (!pool_) return;
    for (int32_t b : row.self.blocks) pool_->release(b);
    for (int32_t b : row.cross.blocks) pool_->release(b);
    row = RowCache{};
}

void DecodeState::retain_row(const RowCache& row) {
    for (int32_t b : row.self.blocks) pool_->retain(b);
    for (int32_t b : row.cross.blocks) pool_->retain(b);
}

std::vector<int64_t> DecodeState::lengths() const {
    std::vector<int64_t> out;
    out.reserve(rows_.size());
    for (const auto& r : rows_) out.push_back(r.self.length);
    return out;
}

int64_t DecodeState::max_length() const {
    int64_t m = 0;
    for (const auto& r : rows_) m = std::max(m, r.self.length);
    return m;
}

bool DecodeState::uniform() const {
    return std::all_of(rows_.begin(), rows_.end(), [&](const RowCache& r) { return r.self.length == rows_.front().self.length; });
}

void DecodeState::add_row() { rows_.emplace_back(); }

void DecodeState::write_cross(int64_t first, const std::vector<int64_t>& lengths, const std::vector<at::Tensor>& keys,
                              const std::vector<at::Tensor>& values) {
    TORCH_CHECK(first >= 0 && first + static_cast<int64_t>(lengths.size()) <= rows(), "write_cross: rows out of range");
    if (lengths.empty()) return;
    const int64_t S = keys.empty() ? 0 : keys[0].size(2);
    std::vector<int64_t> blocks, offsets, sources;
    for (size_t j = 0; j < lengths.size(); ++j) {
        BlockList& cross = rows_[static_cast<size_t>(first) + j].cross;
        for (int32_t b : cross.blocks) pool_->release(b);
        cross = BlockList{};
        while (static_cast<int64_t>(cross.blocks.size()) < blocks_for(lengths[j])) cross.blocks.push_back(pool_->allocate());
        cross.length = lengths[j];
        for (int64_t s = 0; s < lengths[j]; ++s) {
            blocks.push_back(cross.blocks[static_cast<size_t>(s / kBs)]);
            offsets.push_back(s % kBs);
            sources.push_back(static_cast<int64_t>(j) * S + s);
        }
    }
    PagedStep step;
    step.pool = pool_.get();
    const auto device = pool_->keys(0).device();
    step.write_blocks = long_tensor(blocks, device);
    step.write_offsets = long_tensor(offsets, device);
    step.write_rows = long_tensor(sources, device);
    for (size_t l = 0; l < keys.size(); ++l) step.write(static_cast<int64_t>(l), keys[l], values[l]);
}

void DecodeState::filter(const std::vector<int64_t>& rows) {
    std::vector<RowCache> kept;
    kept.reserve(rows.size());
    for (int64_t r : rows) {
        TORCH_CHECK(r >= 0 && r < this->rows(), "DecodeState::filter: row ", r, " out of range");
        kept.push_back(rows_[static_cast<size_t>(r)]);
        retain_row(kept.back());
    }
    for (auto& r : rows_) release_row(r);
    rows_ = std::move(kept);
}

void DecodeState::concatenate(DecodeState&& other) {
    if (!pool_) pool_ = other.pool_;
    if (other.pool_ == pool_) {
        for (auto& r : other.rows_) rows_.push_back(std::move(r));
        other.rows_.clear();
        return;
    }
    concatenate(static_cast<const DecodeState&>(other));
}

void DecodeState::concatenate(const DecodeState& other) {
    if (!pool_) pool_ = other.pool_;
    if (other.pool_ == pool_) {
        for (const auto& r : other.rows_) {
            rows_.push_back(r);
            retain_row(r);
        }
        return;
    }
    // Different pools: copy the other's blocks into ours (tests and tools only).
    const auto& shape = pool_->shape();
    TORCH_CHECK(other.pool_->shape().layers == shape.layers && other.pool_->shape().heads == shape.heads &&
                    other.pool_->shape().head_dim == shape.head_dim,
                "DecodeState::concatenate: caches of different models");
    std::unordered_map<int32_t, int32_t> copied;
    auto copy_list = [&](const BlockList& from) {
        BlockList to;
        to.length = from.length;
        for (int32_t b : from.blocks) {
            auto it = copied.find(b);
            if (it != copied.end()) {
                pool_->retain(it->second);
                to.blocks.push_back(it->second);
                continue;
            }
            const int32_t mine = pool_->allocate();
            for (int64_t l = 0; l < shape.layers; ++l) {
                at::Tensor keys = pool_->keys(l), values = pool_->values(l);
                keys.select(0, mine).copy_(other.pool_->keys(l).select(0, b));
                values.select(0, mine).copy_(other.pool_->values(l).select(0, b));
            }
            pool_->add_bytes_moved(pool_->bytes_per_block());
            copied.emplace(b, mine);
            to.blocks.push_back(mine);
        }
        return to;
    };
    for (const auto& r : other.rows_) rows_.push_back(RowCache{copy_list(r.self), copy_list(r.cross)});
}

DecodeState DecodeState::take(int64_t begin, int64_t count) {
    TORCH_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "DecodeState::take: rows out of range");
    DecodeState out(pool_);
    for (int64_t i = begin; i < begin + count; ++i) {
        out.rows_.push_back(std::move(rows_[static_cast<size_t>(i)]));
        rows_[static_cast<size_t>(i)] = RowCache{};
    }
    return out;
}

void DecodeState::put(int64_t begin, DecodeState&& part) {
    TORCH_CHECK(part.pool_ == pool_ && begin >= 0 && begin + part.rows() <= rows(), "DecodeState::put: rows out of range");
    for (int64_t i = 0; i < part.rows(); ++i) {
        release_row(rows_[static_cast<size_t>(begin + i)]);
        rows_[static_cast<size_t>(begin + i)] = std::move(part.rows_[static_cast<size_t>(i)]);
    }
    part.rows_.clear();
}

void DecodeState::erase(int64_t begin, int64_t count) {
    TORCH_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "DecodeState::erase: rows out of range");
    for (int64_t i = begin; i < begin + count; ++i) release_row(rows_[static_cast<size_t>(i)]);
    rows_.erase(rows_.begin() + begin, rows_.begin() + begin + count);
}

void DecodeState::reorder(int64_t begin, const std::vector<int64_t>& source) {
    const int64_t n = static_cast<int64_t>(source.size());
    TORCH_CHECK(begin >= 0 && begin + n <= rows(), "DecodeState::reorder: rows out of range");
    std::vector<RowCache> next;
    next.reserve(source.size());
    for (int64_t s : source) {
        TORCH_CHECK(s >= 0 && s < n, "DecodeState::reorder: source ", s, " outside the request's rows");
        next.push_back(rows_[static_cast<size_t>(begin + s)]);
        retain_row(next.back());
    }
    for (int64_t j = 0; j < n; ++j) {
        release_row(rows_[static_cast<size_t>(begin + j)]);
        rows_[static_cast<size_t>(begin + j)] = std::move(next[static_cast<size_t>(j)]);
    }
}

void DecodeState::make_room(BlockList& list, int64_t positions) {
    // Blocks that will be written must be this row's own: a block shared with another row (a beam
    // fork) is copied first when it holds valid positions, else simply replaced.
    const int64_t first = list.length / kBs;
    for (int64_t j = first; j < static_cast<int64_t>(list.blocks.size()) && j * kBs < positions; ++j) {
        int32_t& b = list.blocks[static_cast<size_t>(j)];
        if (pool_->refcount(b) <= 1) continue;
        const int32_t own = pool_->allocate();
        if (j * kBs < list.length) pool_->copy_block(b, own);
        pool_->release(b);
        b = own;
    }
    while (static_cast<int64_t>(list.blocks.size()) < blocks_for(positions)) list.blocks.push_back(pool_->allocate());
}

PagedStep DecodeState::begin_forward(const std::vector<int64_t>& added, int64_t T) {
    TORCH_CHECK(static_cast<int64_t>(added.size()) == rows(), "begin_forward: one count per row");
    TORCH_CHECK(pool_, "begin_forward: a state without a pool");
    PagedStep step;
    step.pool = pool_.get();
    step.rows = rows();
    step.new_tokens = T;
    std::vector<int64_t> blocks, offsets, sources;
    for (size_t b = 0; b < rows_.size(); ++b) {
        BlockList& self = rows_[b].self;
        TORCH_CHECK(added[b] >= 0 && added[b] <= T, "begin_forward: ", added[b], " new tokens in a pass of ", T);
        make_room(self, self.length + added[b]);
        step.past.push_back(self.length);
        step.visible.push_back(self.length + added[b]);
        for (int64_t t = 0; t < added[b]; ++t) {
            const int64_t pos = self.length + t;
            blocks.push_back(self.blocks[static_cast<size_t>(pos / kBs)]);
            offsets.push_back(pos % kBs);
            sources.push_back(static_cast<int64_t>(b) * T + t);
        }
        step.self_width = std::max(step.self_width, blocks_for(self.length + added[b]));
        step.cross_width = std::max(step.cross_width, static_cast<int64_t>(rows_[b].cross.blocks.size()));
        step.cross_lengths.push_back(rows_[b].cross.length);
        step.key_length = std::max(step.key_length, self.length + T);
        step.cross_length = std::max(step.cross_length, rows_[b].cross.length);
    }
    step.self_table.assign(static_cast<size_t>(step.rows * step.self_width), 0);
    step.cross_table.assign(static_cast<size_t>(step.rows * step.cross_width), 0);
    for (size_t b = 0; b < rows_.size(); ++b) {
        const auto& self = rows_[b].self.blocks;
        const size_t n = std::min<size_t>(self.size(), static_cast<size_t>(step.self_width));
        std::copy(self.begin(), self.begin() + static_cast<std::ptrdiff_t>(n),
                  step.self_table.begin() + static_cast<std::ptrdiff_t>(b * static_cast<size_t>(step.self_width)));
        const auto& cross = rows_[b].cross.blocks;
        std::copy(cross.begin(), cross.end(),
                  step.cross_table.begin() + static_cast<std::ptrdiff_t>(b * static_cast<size_t>(step.cross_width)));
    }
    const auto device = pool_->keys(0).device();
    step.write_blocks = long_tensor(blocks, device);
    step.write_offsets = long_tensor(offsets, device);
    step.write_rows = long_tensor(sources, device);
    return step;
}

void DecodeState::advance(const std::vector<int64_t>& added) {
    TORCH_CHECK(added.size() == rows_.size(), "DecodeState::advance: one count per row");
    for (size_t b = 0; b < added.size(); ++b) rows_[b].self.length += added[b];
}

int64_t DecodeState::blocks_in_use() const {
    std::vector<int32_t> all;
    for (const auto& r : rows_) {
        all.insert(all.end(), r.self.blocks.begin(), r.self.blocks.end());
        all.insert(all.end(), r.cross.blocks.begin(), r.cross.blocks.end());
    }
    std::sort(all.begin(), all.end());
    return static_cast<int64_t>(std::unique(all.begin(), all.end()) - all.begin());
}

int64_t DecodeState::bytes_allocated() const { return pool_ ? blocks_in_use() * pool_->bytes_per_block() : 0; }

int64_t DecodeState::bytes_in_use() const {
    if (!pool_) return 0;
    std::unordered_map<int32_t, int64_t> valid;  // shared blocks count once
    auto count = [&](const BlockList& list) {
        for (size_t j = 0; j < list.blocks.size(); ++j) {
            const int64_t n = std::clamp<int64_t>(list.length - static_cast<int64_t>(j) * kBs, 0, kBs);
            int64_t& v = valid[list.blocks[j]];
            v = std::max(v, n);
        }
    };
    for (const auto& r : rows_) {
        count(r.self);
        count(r.cross);
    }
    int64_t positions = 0;
    for (const auto& [block, n] : valid) positions += n;
    return positions * (pool_->bytes_per_block() / kBs);
}

}  // namespace lorascope::models
