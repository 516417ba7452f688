// The engine as the window reaches it: a shared module (liblorascope-engine.so: lorascope_engine and
// LibTorch behind engine_module.cpp) that `lorascope` loads with dlopen on first use
// (engine_module_loader.h). Linked into the executable, LibTorch's ~300 libraries were loaded and
// relocated and its operator registry built before main() ran: 0.6 s of CPU for `--version` alone,
// 40% in the dynamic loader and 33% in libtorch_cpu's static initialisers (perf, docs/benchmarks.md).
// The table passes only the engine's torch-free public API.
#pragma once

#include <memory>
#include <vector>

#include "lorascope/engine.h"
#include "lorascope/runtime.h"

namespace lorascope::gui {

// Changed whenever this table or the public types it passes change shape: a module left over from
// another build is refused with a message instead of crashing.
inline constexpr int kEngineModuleAbi = 1;

struct EngineModule {
    int abi = 0;
    const char* version = "";   // the LORASCOPE_VERSION it was built as
    std::unique_ptr<Engine> (*create)(const EngineOptions&) = nullptr;
    RuntimeInfo (*runtime_info)() = nullptr;
    std::vector<ComputeType> (*cpu_compute_types)() = nullptr;
    const char* (*int8_accuracy_note)() = nullptr;
};

}  // namespace lorascope::gui

// The module's one exported symbol.
extern "C" const lorascope::gui::EngineModule* lorascope_engine_module();
