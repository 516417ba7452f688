// The x86 kernels of ops/panel_gemm.h: panel_gemm_simd.inc compiled for AVX2 (every format),
// AVX-VNNI and AVX-512 VNNI (int8, 4-bit) and AVX-512 (bfloat16, float32). Empty on other
// architectures.
//
// int8 without VNNI: vpmaddubsw multiplies u8 by s8 and sums pairs in int16, which saturates for
// activation bytes up to 255. Measured on this project's Xeon (AVX2 forced, one thread, [32, 1024] x
// [1024, 4096], best of 15): activations cut to 7 bits (q <= 127, half the resolution) 89-92 GMAC/s;
// the sign moved onto the weights (|q - 128| times sign(q - 128) w, exact) 68; both operands
// widened to int16 (vpmaddwd, exact) 56; AVX-VNNI 131-139. The sign form is kept: 1.2x the
// widening's speed with the same exact int32 sums as VNNI, so int8 results are the same on every
// instruction set. (A [1, 1024] x [1024, 65536] product runs at memory speed in all four.)
//
// vpdpbusd goes through inline assembly, not GCC 12's intrinsic: with the intrinsic GCC kept the
// 24 sums of the 6 x 4 AVX-512 tile in memory as well as in registers, a store and two register
// moves per vpdpbusd, and the tile ran at 104 GMAC/s on one Zen 4 core ([32, 512] x [512, 2048],
// -O3, best of 15); the same tile with the instruction in assembly runs at 209 (a loop of nothing
// but independent vpdpbusd: 235), and oneDNN's int8 products took half our tile's time in W1's
// profile. The sums are the same instruction's, so the results do not change.
#include "ops/panel_gemm.h"

#include "ops/cpu_isa.h"

#if LORASCOPE_X86

#include <immintrin.h>

#include <algorithm>
#include <cstring>

// GCC 12's AVX-512 intrinsics pass deliberately undefined vectors as unused merge operands, which
// -Wall reports as uninitialized once inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace lorascope::ops::panel {

// ---- 256-bit: AVX2, AVX-VNNI ----
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define PG_W 8
#define PG_PV 2
#define PG_INT 1
#define PG_VNNI 0
#define PG_BF16 1
#define PG_TILE_I8 4, 1
#define PG_TILE_I4 4, 1
#define PG_TILE_BF16 4, 1
#define PG_TILE_F32 6, 1
#include "ops/panel_gemm_simd_256.inc"
#define PG_MADDUBS(x, w) _mm256_maddubs_epi16((x), (w))
#define PG_MADD1(v) _mm256_madd_epi16((v), _mm256_set1_epi16(1))
#define PG_SIGN(w, x) _mm256_sign_epi8((w), (x))
#define PG_SHL7(v) _mm256_slli_epi32((v), 7)
#define PG_Q4_STEP(acc, x, w) _mm256_add_epi16((acc), _mm256_maddubs_epi16((x), (w)))
#define PG_Q4_FINISH(acc) PG_MADD1(acc)
#include "ops/panel_gemm_simd.inc"
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
namespace avx_vnni {
#define PG_W 8
#define PG_PV 2
#define PG_INT 1
#define PG_VNNI 1
#define PG_BF16 0
#define PG_TILE_I8 6, 1
#define PG_TILE_I4 4, 1
#define PG_TILE_BF16 4, 1
#define PG_TILE_F32 6, 1
#include "ops/panel_gemm_simd_256.inc"
#define PG_DPBUSD(acc, x, w) _mm256_dpbusd_avx_epi32((acc), (x), (w))
#define PG_Q4_STEP(acc, x, w) PG_DPBUSD(acc, x, w)
#define PG_Q4_FINISH(acc) (acc)
#include "ops/panel_gemm_simd.inc"
}  // namespace avx_vnni
#pragma GCC pop_options

// ---- 512-bit: AVX-512 (bfloat16), AVX-512 VNNI (int8, 4-bit) ----
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
namespace avx512 {
#define PG_W 16
#define PG_PV 1
#define PG_INT 0
#define PG_VNNI 0
#define PG_BF16 1
#define PG_TILE_I8 6, 4
#define PG_TILE_I4 4, 2
#define PG_TILE_BF16 4, 4
#define PG_TILE_F32 6, 4
#include "ops/panel_gemm_simd_512.inc"
#include "ops/panel_gemm_simd.inc"
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")
namespace avx512_vnni {
#define PG_W 16
#define PG_PV 1
#define PG_INT 1
#define PG_VNNI 1
#define PG_BF16 0
#define PG_TILE_I8 6, 4
#define PG_TILE_I4 4, 2
#define PG_TILE_BF16 4, 4
#define PG_TILE_F32 6, 4
#include "ops/panel_gemm_simd_512.inc"
inline __m512i dpbusd(__m512i acc, __m512i x, __m512i w) {  // acc += u8 x times s8 w, in groups of 4
    asm("vpdpbusd %[w], %[x], %[acc]" : [acc] "+v"(acc) : [x] "v"(x), [w] "v"(w));
    return acc;
}
#define PG_DPBUSD(acc, x, w) dpbusd((acc), (x), (w))
#define PG_Q4_STEP(acc, x, w) PG_DPBUSD(acc, x, w)
#define PG_Q4_FINISH(acc) (acc)
#include "ops/panel_gemm_simd.inc"
}  // namespace avx512_vnni
#pragma GCC pop_options

}  // namespace lorascope::ops::panel

#pragma GCC diagnostic pop

#endif  // LORASCOPE_X86
