// The workload file of lorascope-cli bench: name, arrival, default params, explicit requests or a
// synthetic description, adapters; every request it yields has its params resolved as the engine
// would.
#include "fuzz_support.h"
#include "lorascope/params.h"
#include "workload.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    LORASCOPE_FUZZ_PARSE({
        const cli::Workload workload = cli::parse_workload(text, "workload.json");
        for (const Request& r : cli::workload_requests(workload, 32128))
            LORASCOPE_FUZZ_PARSE((void)resolve(r.params, GenerationConfig{}, "workload.json"));
    });
    return 0;
}
