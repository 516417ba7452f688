// The workload file of lorascope-cli bench and the window's batching lab (lorascope/workload.h):
// name, arrival, default params and their mix, explicit requests or a synthetic description,
// adapters; every request it yields has its params resolved as the engine would, the file is
// written back and read again, and the arrival times are drawn.
#include "fuzz_support.h"
#include "lorascope/params.h"
#include "lorascope/workload.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    LORASCOPE_FUZZ_PARSE({
        const Workload workload = parse_workload(text, "workload.json");
        const std::vector<Request> requests = workload_requests(workload, 32128);
        for (const Request& r : requests)
            LORASCOPE_FUZZ_PARSE((void)resolve(r.params, GenerationConfig{}, "workload.json"));
        (void)parse_workload(workload_to_json(workload), "written.json");
        (void)arrival_times_s(workload.arrival, requests.size());
    });
    return 0;
}
