#include "ops/cpu_isa.h"

#include <cstdio>
#include <cstdlib>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "lorascope/error.h"

#if LORASCOPE_WITH_DNNL
#include <dnnl.h>
#endif

namespace lorascope::ops {

namespace {

constexpr const char* kVariable = "LORASCOPE_CPU_ISA";

CpuIsa level_of(const CpuFeatures& f) {
    if (f.avx512 && f.avx512_vnni && f.amx_int8) return CpuIsa::Avx512Amx;
    if (f.avx512) return CpuIsa::Avx512;
    if (f.avx2 && f.avx_vnni) return CpuIsa::Avx2Vnni;
    if (f.avx2) return CpuIsa::Avx2;
    return CpuIsa::Scalar;
}

// The extensions the CPU has that a level allows.
CpuFeatures capped(const CpuFeatures& cpu, CpuIsa level) {
    CpuFeatures f;
    if (level >= CpuIsa::Avx2) f.avx2 = cpu.avx2;
    if (level >= CpuIsa::Avx2Vnni) f.avx_vnni = cpu.avx2 && cpu.avx_vnni;
    if (level >= CpuIsa::Avx512) {
        f.avx512 = cpu.avx512;
        f.avx512_vnni = cpu.avx512 && cpu.avx512_vnni;
        f.avx512_bf16 = cpu.avx512 && cpu.avx512_bf16;
    }
    if (level >= CpuIsa::Avx512Amx) f.amx_int8 = cpu.avx512 && cpu.avx512_vnni && cpu.amx_int8;
    return f;
}

#if LORASCOPE_X86
// Linux hands out the 8 KiB of tile state per process on request (arch_prctl ARCH_REQ_XCOMP_PERM
// for XFEATURE_XTILEDATA, kernel 5.16 and later); without it the first tile instruction is fatal.
bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
    constexpr int kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}
#endif

struct State {
    CpuFeatures detected;
    CpuIsa level = CpuIsa::Scalar;
    CpuFeatures in_effect;
    std::string requested;     // the variable's value, "" when unset
    bool requested_valid = true;
    std::string onednn;        // what became of the cap in oneDNN
    bool cpu_has_amx = false;  // whether or not Linux lets us use it
};

#if LORASCOPE_WITH_DNNL
// Before oneDNN's first primitive: afterwards it refuses (the ISA is fixed once a kernel is made).
std::string cap_onednn(CpuIsa level) {
    dnnl_cpu_isa_t isa = dnnl_cpu_isa_all;
    const char* name = "ALL";
    switch (level) {
        case CpuIsa::Scalar: isa = dnnl_cpu_isa_sse41, name = "SSE41"; break;
        case CpuIsa::Avx2: isa = dnnl_cpu_isa_avx2, name = "AVX2"; break;
        case CpuIsa::Avx2Vnni: isa = dnnl_cpu_isa_avx2_vnni, name = "AVX2_VNNI"; break;
        case CpuIsa::Avx512: isa = dnnl_cpu_isa_avx512_core_bf16, name = "AVX512_CORE_BF16"; break;
        case CpuIsa::Avx512Amx: return "not capped";
    }
    setenv("ONEDNN_MAX_CPU_ISA", name, /*overwrite=*/0);
    if (dnnl_set_max_cpu_isa(isa) == dnnl_success) return std::string("capped at ") + name;
    return std::string("NOT capped (oneDNN had run a primitive already; set ONEDNN_MAX_CPU_ISA=") + name + ")";
}
#endif

State make_state() {
    State s;
#if LORASCOPE_X86
    s.detected.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    s.detected.avx_vnni = __builtin_cpu_supports("avxvnni");
    s.detected.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    s.detected.avx512_vnni = __builtin_cpu_supports("avx512vnni");
    s.detected.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
    s.cpu_has_amx = __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8");
    s.detected.amx_int8 = s.cpu_has_amx && amx_permitted();
#endif
    const CpuIsa best = level_of(s.detected);
    s.level = best;
    if (const char* v = std::getenv(kVariable); v && *v) {
        s.requested = v;
        if (const auto want = parse_cpu_isa(v)) {
            if (*want < best) s.level = *want;
        } else {
            s.requested_valid = false;
            std::fprintf(stderr, "lorascope: %s=%s is not one of avx512_amx, avx512, avx2_vnni, avx2, scalar; ignored\n",
                         kVariable, v);
        }
    }
    s.in_effect = capped(s.detected, s.level);
    s.onednn = "not capped";
    if (s.level < best) {
#if LORASCOPE_WITH_DNNL
        s.onednn = cap_onednn(s.level);
#endif
        // ATen reads this at its first vectorised operator; a process that ran one already keeps its choice.
        // (ATen has no AMX kernels: under the avx512 cap it keeps its own.)
        if (s.level < CpuIsa::Avx512)
            setenv("ATEN_CPU_CAPABILITY", s.level == CpuIsa::Scalar ? "default" : "avx2", /*overwrite=*/0);
    }
    return s;
}

const State& state() {
    static const State s = make_state();
    return s;
}

}  // namespace

CpuFeatures detected_cpu_features() { return state().detected; }
CpuIsa cpu_isa() { return state().level; }
const CpuFeatures& cpu_features() { return state().in_effect; }

const char* cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar: return "scalar";
        case CpuIsa::Avx2: return "avx2";
        case CpuIsa::Avx2Vnni: return "avx2_vnni";
        case CpuIsa::Avx512: return "avx512";
        case CpuIsa::Avx512Amx: return "avx512_amx";
    }
    return "?";
}

std::optional<CpuIsa> parse_cpu_isa(const std::string& name) {
    for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx2Vnni, CpuIsa::Avx512, CpuIsa::Avx512Amx})
        if (name == cpu_isa_name(isa)) return isa;
    if (name == "avx2-vnni") return CpuIsa::Avx2Vnni;
    return std::nullopt;
}

void check_cpu_isa_setting() {
    const State& s = state();
    if (!s.requested_valid)
        throw Error(ErrorKind::InvalidArgument, std::string(kVariable) + "='" + s.requested +
                                                    "' is not an instruction set level (avx512_amx, avx512, avx2_vnni, avx2 or "
                                                    "scalar); unset it to use everything the CPU has");
}

std::string cpu_isa_description() {
    const State& s = state();
    const CpuFeatures& d = s.detected;
    std::string cpu;
    for (const auto& [has, name] : {std::pair{d.avx2, "avx2+fma+f16c"}, std::pair{d.avx_vnni, "avx_vnni"},
                                    std::pair{d.avx512, "avx512f/bw/vl/dq"}, std::pair{d.avx512_vnni, "avx512_vnni"},
                                    std::pair{d.avx512_bf16, "avx512_bf16"}, std::pair{d.amx_int8, "amx_int8"}})
        if (has) cpu += (cpu.empty() ? "" : " ") + std::string(name);
    if (s.cpu_has_amx && !d.amx_int8) cpu += " (amx_int8, but Linux refused this process the tiles)";
    std::string out = cpu_isa_name(s.level);
    if (s.level < level_of(d)) out += std::string(" (forced by ") + kVariable + "=" + s.requested + "; oneDNN " + s.onednn + ")";
    return out + "; the CPU has " + (cpu.empty() ? "none of avx2, avx512" : cpu);
}

}  // namespace lorascope::ops
