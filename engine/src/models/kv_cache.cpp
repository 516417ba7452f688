#include "models/kv_cache.h"

#include <algorithm>
#include <limits>

namespace lorascope::models {

namespace {

at::Tensor row_index(const std::vector<int64_t>& rows, const at::Device& device) {
    return at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(device);
}

// Pads dim 2 of [B, H, n, D] to `target` with zeros (new storage).
at::Tensor pad_slots(const at::Tensor& t, int64_t target) {
    if (t.size(2) == target) return t;
    at::Tensor out = at::zeros({t.size(0), t.size(1), target, t.size(3)}, t.options());
    out.narrow(2, 0, t.size(2)).copy_(t);
    return out;
}

}  // namespace

double mask_value(at::ScalarType dtype) {
    switch (dtype) {
        case at::kHalf: return -65504.0;
        case at::kBFloat16: return -3.3895313892515355e38;  // torch.finfo(bfloat16).min exactly: -3.38953139e38 overflows it
        default: return static_cast<double>(std::numeric_limits<float>::lowest());
    }
}

KvCache::KvCache(CacheShape shape, int64_t rows, at::TensorOptions options, int64_t chunk)
    : shape_(shape), options_(options), chunk_(std::max<int64_t>(1, chunk)), lengths_(rows, 0) {
    keys_.resize(shape_.layers);
    values_.resize(shape_.layers);
}

int64_t KvCache::max_length() const {
    return lengths_.empty() ? 0 : *std::max_element(lengths_.begin(), lengths_.end());
}

bool KvCache::uniform() const {
    return std::all_of(lengths_.begin(), lengths_.end(), [&](int64_t n) { return n == lengths_.front(); });
}

void KvCache::grow_to(int64_t capacity) {
    const int64_t keep = max_length();
    for (int64_t l = 0; l < shape_.layers; ++l) {
        for (auto* store : {&keys_, &values_}) {
            // Zeroed, not empty: masked slots are still multiplied (by a zero probability), and
            // uninitialised memory may hold NaN, which survives that product.
            at::Tensor fresh = at::zeros({rows(), shape_.heads, capacity, shape_.head_dim}, options_);
            if (keep > 0 && (*store)[l].defined())
                fresh.narrow(2, 0, keep).copy_((*store)[l].narrow(2, 0, keep));
            (*store)[l] = fresh;
        }
    }
    capacity_ = capacity;
}

void KvCache::reserve(int64_t tokens) {
    const int64_t needed = max_length() + tokens;
    if (needed > capacity_ || (shape_.layers > 0 && !keys_[0].defined())) grow_to(round_up(std::max(needed, capacity_)));
}

std::pair<at::Tensor, at::Tensor> KvCache::write(int64_t layer, const at::Tensor& k, const at::Tensor& v) {
    const int64_t T = k.size(2);
    const int64_t end = max_length() + T;
    if (end > capacity_ || !keys_[layer].defined()) reserve(T);
    at::Tensor& K = keys_[layer];
    at::Tensor& V = values_[layer];
    if (uniform()) {
        const int64_t at_slot = lengths_.empty() ? 0 : lengths_.front();
        K.narrow(2, at_slot, T).copy_(k);
        V.narrow(2, at_slot, T).copy_(v);
    } else {
        TORCH_CHECK(T == 1, "KvCache::write: several tokens per row need rows of equal length");
        if (!scatter_index_.defined() || scatter_index_.size(0) != rows()) {
            scatter_index_ = row_index(lengths_, K.device())
                                 .view({rows(), 1, 1, 1})
                                 .expand({rows(), shape_.heads, 1, shape_.head_dim})
                                 .contiguous();
        }
        K.scatter_(2, scatter_index_, k);
        V.scatter_(2, scatter_index_, v);
    }
    return {K.narrow(2, 0, end), V.narrow(2, 0, end)};
}

void KvCache::advance(const std::vector<int64_t>& added) {
    TORCH_CHECK(added.size() == lengths_.size(), "KvCache::advance: one count per row");
    for (size_t i = 0; i < added.size(); ++i) lengths_[i] += added[i];
    scatter_index_ = at::Tensor();
}

void KvCache::advance(int64_t added) {
    for (auto& n : lengths_) n += added;
    scatter_index_ = at::Tensor();
}

void KvCache::filter(const std::vector<int64_t>& rows) {
    std::vector<int64_t> kept;
    kept.reserve(rows.size());
    for (int64_t r : rows) {
        TORCH_CHECK(r >= 0 && r < this->rows(), "KvCache::filter: row ", r, " out of range");
        kept.push_back(lengths_[r]);
    }
    lengths_ = std::move(kept);
    scatter_index_ = at::Tensor();
    if (shape_.layers == 0 || !keys_[0].defined()) return;
    const int64_t need = max_length();
    const int64_t cap = std::max<int64_t>(chunk_, round_up(need));
    const at::Tensor index = row_index(rows, keys_[0].device());
    for (int64_t l = 0; l < shape_.layers; ++l) {
        for (auto* store : {&keys_, &values_}) {
            at::Tensor picked = (*store)[l].index_select(0, index);
            (*store)[l] = cap < capacity_ ? picked.narrow(2, 0, cap).contiguous() : picked;
        }
    }
    capacity_ = std::min(capacity_, cap);
}

void KvCache::concatenate(const KvCache& other) {
    if (shape_.layers == 0 && lengths_.empty()) {  // a default-constructed cache takes the other's rows
        *this = other;
        return;
    }
    TORCH_CHECK(other.shape_.layers == shape_.layers && other.shape_.heads == shape_.heads &&
                    other.shape_.head_dim == shape_.head_dim,
                "KvCache::concatenate: caches of different models");
    const bool mine = shape_.layers > 0 && keys_[0].defined();
    const bool theirs = other.shape_.layers > 0 && other.keys_[0].defined();
    if (theirs || mine) {
        const int64_t cap = std::max(mine ? capacity_ : 0, theirs ? other.capacity_ : 0);
        for (int64_t l = 0; l < shape_.layers; ++l) {
            auto side = [&](const KvCache& c, const std::vector<at::Tensor>& store, bool present) {
                return present ? pad_slots(store[l], cap)
                               : at::zeros({c.rows(), shape_.heads, cap, shape_.head_dim}, options_);
            };
            keys_[l] = at::cat({side(*this, keys_, mine), side(other, other.keys_, theirs)}, 0);
            values_[l] = at::cat({side(*this, values_, mine), side(other, other.values_, theirs)}, 0);
        }
        capacity_ = cap;
    }
    lengths_.insert(lengths_.end(), other.lengths_.begin(), other.lengths_.end());
    scatter_index_ = at::Tensor();
}

int64_t KvCache::bytes_allocated() const {
    int64_t total = 0;
    for (int64_t l = 0; l < shape_.layers; ++l)
        if (keys_[l].defined()) total += keys_[l].nbytes() + values_[l].nbytes();
    return total;
}

int64_t KvCache::bytes_in_use() const {
    int64_t slots = 0;
    for (int64_t n : lengths_) slots += n;
    return slots * 2 * shape_.layers * shape_.heads * shape_.head_dim *
           static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options_.dtype())));
}

EncoderMemory::EncoderMemory(std::vector<at::Tensor> keys, std::vector<at::Tensor> values,
                             std::vector<int64_t> lengths)
    : keys_(std::move(keys)), values_(std::move(values)), lengths_(std::move(lengths)) {
    rebuild_bias();
}

void EncoderMemory::rebuild_bias() {
    bias_ = at::Tensor();
    if (keys_.empty() || lengths_.empty()) return;
    const int64_t S = keys_[0].size(2);
    if (std::all_of(lengths_.begin(), lengths_.end(), [&](int64_t n) { return n == S; })) return;
    const auto device = keys_[0].device();
    at::Tensor slots = at::arange(S, at::TensorOptions().dtype(at::kLong).device(device));
    at::Tensor valid = slots.unsqueeze(0) < row_index(lengths_, device).unsqueeze(1);  // [B, S]
    bias_ = at::zeros({rows(), 1, 1, S}, keys_[0].options())
                .masked_fill_(valid.logical_not().view({rows(), 1, 1, S}), mask_value(keys_[0].scalar_type()));
}

void EncoderMemory::filter(const std::vector<int64_t>& rows) {
    std::vector<int64_t> kept;
    for (int64_t r : rows) {
        TORCH_CHECK(r >= 0 && r < this->rows(), "EncoderMemory::filter: row ", r, " out of range");
        kept.push_back(lengths_[r]);
    }
    lengths_ = std::move(kept);
    if (!keys_.empty()) {
        const at::Tensor index = row_index(rows, keys_[0].device());
        const int64_t S = lengths_.empty() ? 0 : *std::max_element(lengths_.begin(), lengths_.end());
        for (size_t l = 0; l < keys_.size(); ++l) {
            keys_[l] = keys_[l].index_select(0, index).narrow(2, 0, S).contiguous();
            values_[l] = values_[l].index_select(0, index).narrow(2, 0, S).contiguous();
        }
    }
    rebuild_bias();
}

void EncoderMemory::concatenate(const EncoderMemory& other) {
    if (other.keys_.empty()) return;
    if (keys_.empty()) {
        *this = other;
        return;
    }
    TORCH_CHECK(keys_.size() == other.keys_.size(), "EncoderMemory::concatenate: different models");
    const int64_t S = std::max(keys_[0].size(2), other.keys_[0].size(2));
    for (size_t l = 0; l < keys_.size(); ++l) {
        keys_[l] = at::cat({pad_slots(keys_[l], S), pad_slots(other.keys_[l], S)}, 0);
        values_[l] = at::cat({pad_slots(values_[l], S), pad_slots(other.values_[l], S)}, 0);
    }
    lengths_.insert(lengths_.end(), other.lengths_.begin(), other.lengths_.end());
    rebuild_bias();
}

int64_t EncoderMemory::bytes_allocated() const {
    int64_t total = 0;
    for (size_t l = 0; l < keys_.size(); ++l) total += keys_[l].nbytes() + values_[l].nbytes();
    return total;
}

}  // namespace lorascope::models
