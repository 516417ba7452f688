#include "engine_module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "lorascope/error.h"

namespace lorascope::gui {

namespace {

std::string modulePath() {
    if (const char* env = std::getenv("LORASCOPE_ENGINE_MODULE"); env && *env) return env;
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string dir = n > 0 ? std::string(exe, size_t(n)) : std::string();
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    return dir + LORASCOPE_ENGINE_MODULE_RELPATH;
}

const EngineModule* load() {
    const std::string path = modulePath();
    // RTLD_LOCAL: the module's LibTorch stays its own; never closed (engines and their threads live
    // in its code until the process ends).
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        throw Error(ErrorKind::NotFound, path,
                    std::string("cannot load the engine module (LORASCOPE_ENGINE_MODULE names another): ") + dlerror());
    using Entry = const EngineModule* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, "lorascope_engine_module"));
    const EngineModule* m = entry ? entry() : nullptr;
    if (!m || m->abi != kEngineModuleAbi || std::strcmp(m->version, LORASCOPE_VERSION) != 0)
        throw Error(ErrorKind::Unsupported, path,
                    std::string("not the engine module of lorascope ") + LORASCOPE_VERSION + " (ABI " +
                        std::to_string(kEngineModuleAbi) + "): rebuild or reinstall it");
    return m;
}

}  // namespace

const EngineModule& engineModule() {
    static std::mutex mutex;
    static const EngineModule* module = nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    if (!module) module = load();
    return *module;
}

}  // namespace lorascope::gui
