// The AMX kernel of ops/panel_gemm.h for int8 (Intel Sapphire Rapids and later): tile products
// (tdpbusd: a 16 x 64 block of u8 activations times a 64 x 16 block of s8 weights, summed in 16 x 16
// int32) on the panels as they are packed: a panel's 16 steps of 4 inputs x 16 columns are, byte for
// byte, the B tile tdpbusd wants (16 rows of 64 bytes, each the 4 inputs of 16 columns), so the
// weights need no second layout. The int32 sums are the exact sums every other int8 kernel computes
// and the epilogue is the same fused operations in the same order: results are bit-identical to
// the VNNI and portable kernels (tests/models/test_panel_gemm.cpp).
//
// Why: oneDNN reaches AMX on these CPUs and our VNNI tile does not; on the Sapphire Rapids Xeon of
// docs/benchmarks.md oneDNN's AMX int8 ran a [32, 1024] x [1024, 4096] product 10x faster than our
// AVX-512 VNNI tile, so moving int8 onto our pool (issue 28) cost that machine its int8 speed.
//
// Tiles: 0-3 sums (2 row blocks x 2 panels), 4-5 activations (two blocks of 16 rows), 6-7 weights
// (two panels). The configuration is loaded at each call and released at its end: oneDNN's own AMX
// kernels may run on the same threads with configurations of their own.
#include "ops/panel_gemm.h"

#include "ops/cpu_isa.h"

#if LORASCOPE_X86

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

// As in panel_gemm_x86.cpp: GCC 12's AVX-512 intrinsics trip -Wall's uninitialized checks (bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace lorascope::ops::panel {

#pragma GCC push_options
#pragma GCC target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
namespace amx {

namespace {

constexpr int64_t kRows = 16;        // activation rows per A tile
constexpr int64_t kChunk = 64;       // inputs per tile product (16 steps of 4)
constexpr int64_t kChunkBytes = 1024;  // of a panel: 16 steps x 64 bytes

struct alignas(64) TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

TileConfig make_config() {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
        c.colsb[t] = 64;
        c.rows[t] = 16;
    }
    return c;
}

// Sums of NR row blocks by NP panels over `chunks` whole chunks, stored in c[(r * 2 + p) * 256 ..]
// as 16 rows of 16 int32.
template <int NR, int NP>
void tile_sums(const uint8_t* const a[2], int64_t lda, const uint8_t* const b[2], int64_t chunks, int32_t* c) {
    _tile_zero(0);
    if constexpr (NP > 1) _tile_zero(1);
    if constexpr (NR > 1) _tile_zero(2);
    if constexpr (NR > 1 && NP > 1) _tile_zero(3);
    for (int64_t ch = 0; ch < chunks; ++ch) {
        _tile_loadd(4, a[0] + ch * kChunk, lda);
        _tile_loadd(6, b[0] + ch * kChunkBytes, 64);
        _tile_dpbusd(0, 4, 6);
        if constexpr (NP > 1) {
            _tile_loadd(7, b[1] + ch * kChunkBytes, 64);
            _tile_dpbusd(1, 4, 7);
        }
        if constexpr (NR > 1) {
            _tile_loadd(5, a[1] + ch * kChunk, lda);
            _tile_dpbusd(2, 5, 6);
            if constexpr (NP > 1) _tile_dpbusd(3, 5, 7);
        }
    }
    _tile_stored(0, c, 64);
    if constexpr (NP > 1) _tile_stored(1, c + 256, 64);
    if constexpr (NR > 1) _tile_stored(2, c + 512, 64);
    if constexpr (NR > 1 && NP > 1) _tile_stored(3, c + 768, 64);
}

// The steps past the last whole chunk (K not a multiple of 64), added to one block's sums.
void tail_sums(const uint8_t* a, int64_t lda, const uint8_t* panel, int64_t s0, int64_t s1, int64_t rows, int32_t* c) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t col = 0; col < kCols; ++col) {
            int32_t acc = 0;
            for (int64_t s = s0; s < s1; ++s)
                for (int64_t j = 0; j < 4; ++j)
                    acc += static_cast<int32_t>(a[r * lda + s * 4 + j]) *
                           static_cast<int8_t>(panel[s * 64 + col * 4 + j]);
            c[r * kCols + col] += acc;
        }
}

// y = sum * (row scale * column scale) + (row min * column offset + bias), as the VNNI tile does.
void epilogue(const Product& pr, const int32_t* c, int64_t i0, int64_t rows, int64_t n0) {
    const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(kCols, pr.layout->N - n0)) - 1u);
    const __m512 cs = _mm512_loadu_ps(pr.column_scale + n0), offset = _mm512_loadu_ps(pr.column_offset + n0);
    const __m512 bias = pr.bias ? _mm512_loadu_ps(pr.bias + n0) : _mm512_setzero_ps();
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        const __m512 rs = _mm512_set1_ps(pr.xq.scale[i]), rm = _mm512_set1_ps(pr.xq.min[i]);
        const __m512 sums = _mm512_cvtepi32_ps(_mm512_loadu_si512(c + r * kCols));
        const __m512 out = _mm512_fmadd_ps(sums, _mm512_mul_ps(rs, cs), _mm512_fmadd_ps(rm, offset, bias));
        _mm512_mask_storeu_ps(pr.y + i * pr.ldy + n0, mask, out);
    }
}

}  // namespace

void multiply(const Product& pr, int64_t p0, int64_t p1) {
    const Layout& l = *pr.layout;
    const int64_t ld = pr.xq.ld, chunks = l.k_padded / kChunk, steps = l.k_padded / 4;
    const int64_t blocks = (pr.M + kRows - 1) / kRows;
    // A tile reads 16 rows: a partial last block that the caller did not pad (pr.xq.rows) is read
    // from a copy padded with zero rows.
    thread_local std::vector<uint8_t> padded;
    const int64_t partial = pr.xq.rows >= blocks * kRows ? 0 : pr.M % kRows;
    if (partial) {
        padded.assign(static_cast<size_t>(kRows * ld), 0);
        std::memcpy(padded.data(), pr.xq.q + (blocks - 1) * kRows * ld, static_cast<size_t>(partial * ld));
    }
    auto rows_of = [&](int64_t b) { return partial && b == blocks - 1 ? padded.data() : pr.xq.q + b * kRows * ld; };

    static const TileConfig config = make_config();
    _tile_loadconfig(&config);
    alignas(64) int32_t c[4 * kRows * kCols];
    for (int64_t p = p0; p < p1; p += 2) {
        const int64_t np = std::min<int64_t>(2, p1 - p);
        const uint8_t* const b[2] = {pr.packed + p * l.panel_bytes, pr.packed + (p + np - 1) * l.panel_bytes};
        for (int64_t blk = 0; blk < blocks; blk += 2) {
            const int64_t nr = std::min<int64_t>(2, blocks - blk);
            const uint8_t* const a[2] = {rows_of(blk), rows_of(blk + nr - 1)};
            if (nr == 2 && np == 2) tile_sums<2, 2>(a, ld, b, chunks, c);
            else if (nr == 2) tile_sums<2, 1>(a, ld, b, chunks, c);
            else if (np == 2) tile_sums<1, 2>(a, ld, b, chunks, c);
            else tile_sums<1, 1>(a, ld, b, chunks, c);
            for (int64_t r = 0; r < nr; ++r)
                for (int64_t q = 0; q < np; ++q) {
                    int32_t* sums = c + (r * 2 + q) * kRows * kCols;
                    const int64_t i0 = (blk + r) * kRows, rows = std::min(kRows, pr.M - i0);
                    if (chunks * 16 < steps) tail_sums(a[r], ld, b[q], chunks * 16, steps, rows, sums);
                    epilogue(pr, sums, i0, rows, (p + q) * kCols);
                }
        }
    }
    _tile_release();
}

}  // namespace amx
#pragma GCC pop_options

}  // namespace lorascope::ops::panel

#pragma GCC diagnostic pop

#endif  // LORASCOPE_X86
