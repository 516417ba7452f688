// Loads the engine module (engine_module.h) once, on whichever thread first needs the engine:
// LORASCOPE_ENGINE_MODULE when set, else liblorascope-engine.so where the install puts it
// relative to the executable (the build tree mirrors that layout).
#pragma once

#include "engine_module.h"

namespace lorascope::gui {

// Thread-safe; later calls return the same table. Throws lorascope::Error naming the file and
// what the dynamic loader said (a failed load is retried at the next call).
const EngineModule& engineModule();

}  // namespace lorascope::gui
