// Absolute position embeddings of the BART-shaped models, added to the token embeddings: BART's and
// mBART's learned table (read at position + 2), Marian's and Pegasus's sinusoidal table (position 0
// first), and M2M100's fairseq table, whose positions count non-pad tokens from pad_token_id + 1.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "lorascope/config.h"

namespace lorascope::models {

// The table MarianSinusoidalPositionalEmbedding builds: sin of pos / 10000^(2*(j/2)/dim) in the
// first ceil(dim/2) columns and cos in the rest, in float64, rounded to float32.
at::Tensor marian_sinusoid_table(int64_t rows, int64_t dim);

// M2M100SinusoidalPositionalEmbedding.get_embedding: float32 sin | cos of pos * exp(-k log(10000) /
// (dim/2 - 1)), a zero column for odd dim, and a zero row at padding_idx.
at::Tensor fairseq_sinusoid_table(int64_t rows, int64_t dim, int64_t padding_idx);

class PositionTable {
public:
    PositionTable() = default;
    // Learned / Sinusoidal: `table` [rows, d] read at position + `offset`.
    PositionTable(PositionEmbedding kind, at::Tensor table, int64_t offset);
    // SinusoidalFromPad: fairseq's table for max_positions (+ 2 rows), grown on demand as HF does.
    static PositionTable from_pad(int64_t max_positions, int64_t dim, int64_t padding_idx, at::TensorOptions options);

    // Embeddings [B, T, d] of tokens `ids` [B, T] whose first sits at position past[b] of its row.
    at::Tensor forward(const at::Tensor& ids, const std::vector<int64_t>& past) const;
    // The longest sequence the table covers; none when it grows (SinusoidalFromPad).
    std::optional<int64_t> max_length() const;
    bool defined() const { return table_.defined(); }

private:
    PositionEmbedding kind_ = PositionEmbedding::Learned;
    at::Tensor table_;
    int64_t offset_ = 0;        // Learned: 2; Sinusoidal: 0
    int64_t padding_idx_ = 0;   // SinusoidalFromPad
};

}  // namespace lorascope::models
