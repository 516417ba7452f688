// Helpers for running a batched tensor operation on the subset of rows a processor applies to.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace lorascope::sampling {

// Applies `op` (at::Tensor [n, vocab] -> at::Tensor [n, vocab]) to the listed rows of `scores`
// and writes the result back. With every row listed it works on `scores` itself (no copies).
template <typename Op>
void apply_to_rows(at::Tensor& scores, const std::vector<int64_t>& rows, Op&& op) {
    if (rows.empty()) return;
    if (static_cast<int64_t>(rows.size()) == scores.size(0)) {
        at::Tensor out = op(scores);
        if (!out.is_same(scores)) scores.copy_(out);
        return;
    }
    at::Tensor index = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(scores.device());
    at::Tensor out = op(scores.index_select(0, index));
    scores.index_copy_(0, index, out);
}

// A [n, 1] fp32 column of per-row parameters on the scores' device, for broadcasting.
inline at::Tensor parameter_column(const std::vector<float>& values, const at::Tensor& like) {
    return at::tensor(values, at::TensorOptions().dtype(at::kFloat)).to(like.device()).view({-1, 1});
}

inline at::Tensor long_column(const std::vector<int64_t>& values, const at::Tensor& like) {
    return at::tensor(values, at::TensorOptions().dtype(at::kLong)).to(like.device()).view({-1, 1});
}

}  // namespace lorascope::sampling
