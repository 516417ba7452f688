// Which x86 instruction sets the CPU kernels may use in this process: what the CPU has, capped by
// LORASCOPE_CPU_ISA (avx512_amx | avx512 | avx2_vnni | avx2 | scalar), read once. The cap also goes to oneDNN
// (dnnl_set_max_cpu_isa, before its first primitive) and, where not set already, to ATen's own
// kernels (ATEN_CPU_CAPABILITY), so that an AVX-512 machine runs the AVX2 and portable paths as
// an AVX2-only or a non-x86 machine would: tests and benchmarks of every path on any CI machine,
// in the spirit of oneDNN's ONEDNN_MAX_CPU_ISA and CTranslate2's CT2_FORCE_CPU_ISA.
//
// Torch-free, and free of x86 intrinsics: it compiles on arm64 too, where every answer is scalar.
#pragma once

#include <optional>
#include <string>

#if defined(__x86_64__)
#define LORASCOPE_X86 1
#else
#define LORASCOPE_X86 0
#endif

namespace lorascope::ops {

// Ordered: each level includes the ones below it.
enum class CpuIsa {
    Scalar,    // portable C++ loops (every CPU; arm64)
    Avx2,      // AVX2 + FMA + F16C (AMD Zen 1-3, Intel Haswell to Comet Lake)
    Avx2Vnni,  // and AVX-VNNI, 256-bit int8 dot products (Intel Alder Lake and later)
    Avx512,    // AVX-512 F/BW/VL/DQ, with VNNI and BF16 where the CPU has them (Zen 4, Xeon)
    Avx512Amx, // and AMX tiles with int8 products (Intel Sapphire Rapids and later)
};

// Instruction-set extensions, either of the CPU or in effect under the cap.
struct CpuFeatures {
    bool avx2 = false;         // with FMA and F16C
    bool avx_vnni = false;     // VEX vpdpbusd
    bool avx512 = false;       // F + BW + VL + DQ
    bool avx512_vnni = false;  // EVEX vpdpbusd
    bool avx512_bf16 = false;  // vdpbf16ps (oneDNN's bfloat16 products)
    bool amx_int8 = false;     // AMX-TILE + AMX-INT8, and Linux let this process use the tiles
};

CpuFeatures detected_cpu_features();  // what this CPU reports
CpuIsa cpu_isa();                     // the level in effect: the CPU's, at most LORASCOPE_CPU_ISA
const CpuFeatures& cpu_features();    // the extensions in effect under that level

const char* cpu_isa_name(CpuIsa isa);  // "scalar", "avx2", "avx2_vnni", "avx512", "avx512_amx"
std::optional<CpuIsa> parse_cpu_isa(const std::string& name);

// Throws lorascope::Error (InvalidArgument) when LORASCOPE_CPU_ISA holds an unknown name; an unknown
// name is otherwise ignored (with one line on stderr), so the engine and the CLI check at start.
void check_cpu_isa_setting();

// One line for `info` and benchmark reports: the level in effect, whether it was forced, what the
// CPU has, and whether oneDNN took the cap.
std::string cpu_isa_description();

}  // namespace lorascope::ops
