#include "models/position_embedding.h"

#include <algorithm>
#include <cmath>

#include "models/position_bias.h"

namespace lorascope::models {

at::Tensor marian_sinusoid_table(int64_t rows, int64_t dim) {
    at::Tensor out = at::empty({rows, dim}, at::TensorOptions().dtype(at::kFloat));
    float* p = out.data_ptr<float>();
    const int64_t sentinel = dim % 2 == 0 ? dim / 2 : dim / 2 + 1;
    // Column j of position_enc divides by 10000^(2*(j//2)/dim); sin takes its even columns, cos its
    // odd ones, both in float64 (numpy) before the float32 cast.
    for (int64_t pos = 0; pos < rows; ++pos) {
        for (int64_t k = 0; k < dim; ++k) {
            const bool sine = k < sentinel;
            const int64_t j = sine ? 2 * k : 2 * (k - sentinel) + 1;
            const double angle =
                static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(2 * (j / 2)) / static_cast<double>(dim));
            p[pos * dim + k] = static_cast<float>(sine ? std::sin(angle) : std::cos(angle));
        }
    }
    return out;
}

at::Tensor fairseq_sinusoid_table(int64_t rows, int64_t dim, int64_t padding_idx) {
    // The same ATen operations as HF's torch code, so that float32 rounds the same way.
    const int64_t half = dim / 2;
    const double step = std::log(10000.0) / static_cast<double>(half - 1);
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    at::Tensor freq = at::exp(at::arange(half, i64).to(at::kFloat) * -step);
    at::Tensor angles = at::arange(rows, i64).to(at::kFloat).unsqueeze(1) * freq.unsqueeze(0);
    at::Tensor table = at::cat({at::sin(angles), at::cos(angles)}, 1).view({rows, -1});
    if (dim % 2 == 1) table = at::cat({table, at::zeros({rows, 1}, table.options())}, 1);
    if (padding_idx >= 0 && padding_idx < rows) table[padding_idx].zero_();
    return table;
}

PositionTable::PositionTable(PositionEmbedding kind, at::Tensor table, int64_t offset)
    : kind_(kind), table_(std::move(table)), offset_(offset) {}

PositionTable PositionTable::from_pad(int64_t max_positions, int64_t dim, int64_t padding_idx,
                                      at::TensorOptions options) {
    PositionTable t(PositionEmbedding::SinusoidalFromPad,
                    fairseq_sinusoid_table(max_positions + 2, dim, padding_idx).to(options), 0);
    t.padding_idx_ = padding_idx;
    return t;
}

std::optional<int64_t> PositionTable::max_length() const {
    if (kind_ == PositionEmbedding::SinusoidalFromPad) return std::nullopt;
    return table_.size(0) - offset_;
}

at::Tensor PositionTable::forward(const at::Tensor& ids, const std::vector<int64_t>& past) const {
    const int64_t T = ids.size(1);
    if (kind_ != PositionEmbedding::SinusoidalFromPad)
        return at::embedding(table_, query_positions(past, T, ids.device()) + offset_);
    // create_position_ids_from_input_ids: (cumsum(mask) + past) * mask + pad, mask = ids != pad, over
    // the tokens of this call. A pad token reads the zero row; the ones after it do not count it.
    at::Tensor mask = ids.ne(padding_idx_).to(at::kLong);
    at::Tensor base = at::tensor(past, at::TensorOptions().dtype(at::kLong)).to(ids.device()).unsqueeze(1);
    at::Tensor positions = (mask.cumsum(1) + base) * mask + padding_idx_;
    const int64_t longest_past = past.empty() ? 0 : *std::max_element(past.begin(), past.end());
    const int64_t needed = padding_idx_ + 1 + T + longest_past;
    if (needed <= table_.size(0)) return at::embedding(table_, positions);
    // Past the table HF builds a longer one; its rows are the same numbers.
    at::Tensor longer = fairseq_sinusoid_table(needed + 2, table_.size(1), padding_idx_).to(table_.options());
    return at::embedding(longer, positions);
}

}  // namespace lorascope::models
