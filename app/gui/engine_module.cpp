// liblorascope-engine.so's entry point (engine_module.h). Every other symbol of the module stays
// inside it (-Wl,--exclude-libs,ALL), so its copies of lorascope_core never interpose on the
// executable's.
#include "engine_module.h"

namespace {

const lorascope::gui::EngineModule kModule = [] {
    lorascope::gui::EngineModule m;
    m.abi = lorascope::gui::kEngineModuleAbi;
    m.version = LORASCOPE_VERSION;
    m.create = [](const lorascope::EngineOptions& o) { return lorascope::Engine::create(o); };
    m.runtime_info = &lorascope::runtime_info;
    m.cpu_compute_types = &lorascope::cpu_compute_types;
    m.int8_accuracy_note = &lorascope::int8_accuracy_note;
    return m;
}();

}  // namespace

extern "C" __attribute__((visibility("default"))) const lorascope::gui::EngineModule* lorascope_engine_module() {
    return &kModule;
}
