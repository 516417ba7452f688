// A benchmark workload: which requests, with which parameters and adapters, arrive when. The one
// description behind `lorascope-cli bench --workload FILE` and the window's batching lab, so that
// both run exactly the same requests. Torch-free (lorascope_core); every problem in a file is a
// lorascope::Error that names it.
//
// The file (JSON):
//   {"name": ..., "params": {defaults for every request},
//    "requests": [{"prompt"|"input_ids", "adapter", "params"}, ...]
//    or "synthetic": {"count", "prompt_tokens": [min, max], "max_new_tokens": [min, max],
//                     "seed", "min_id"},
//    "adapters": [names, round robin; "" = the base model],
//    "params_mix": [{params}, ...]   (round robin over the requests, merged over "params"),
//    "arrival": {"kind": "all"} | {"kind": "poisson", "rate": per_second, "seed"}
//             | {"kind": "bursts", "size": requests_per_burst, "interval_s": seconds}}
// JSON Lines prompts (one {"prompt"|"input_ids", "adapter", "params", "id"} object per line, as
// `lorascope-cli generate` reads them) make a workload that arrives all at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope {

enum class ArrivalKind { All, Poisson, Bursts };
const char* to_string(ArrivalKind kind);

struct WorkloadArrival {
    ArrivalKind kind = ArrivalKind::All;
    double rate = 1.0;              // poisson: arrivals per second
    uint64_t seed = 0;              // poisson: the gaps' generator
    int64_t burst_size = 1;         // bursts: requests per burst
    double burst_interval_s = 1.0;  // bursts: seconds between bursts
};

struct WorkloadItem {               // one explicit request
    std::optional<std::string> prompt;
    std::vector<int64_t> input_ids;
    std::string adapter;
    std::string params_json = "{}"; // merged over the workload's default params
    std::string client_id;
};

struct SyntheticWorkload {          // prompts of random ids, uniform lengths
    int64_t count = 0;
    int64_t prompt_min = 8, prompt_max = 128;
    int64_t max_new_min = 0, max_new_max = 0;   // 0: max_new_tokens from the params
    uint64_t seed = 0;
    int64_t min_id = 5;             // below: special tokens
};

struct Workload {
    std::string path;               // where it came from (named in errors), "" when built in code
    std::string name;               // "name", else the path
    WorkloadArrival arrival;
    std::string params_json = "{}";         // defaults for every request
    std::vector<std::string> params_mix;    // JSON objects, round robin, merged over params_json
    std::vector<std::string> adapters;      // round robin over requests without their own
    std::vector<WorkloadItem> requests;     // explicit requests, or ...
    std::optional<SyntheticWorkload> synthetic;   // ... synthetic ones
};

Workload read_workload(const std::string& path);
Workload parse_workload(const std::string& text, const std::string& path);
// JSON Lines prompts (blank lines skipped); arrival all at once.
Workload read_jsonl_prompts(const std::string& path);
Workload parse_jsonl_prompts(const std::string& text, const std::string& path);
// The workload as a file that parse_workload reads back to the same workload.
std::string workload_to_json(const Workload& workload);
// The arrival as the report shows it ({"kind": "poisson", "rate": 2, "seed": 0}).
std::string arrival_to_json(const WorkloadArrival& arrival);

// The requests the workload describes, in submission order; synthetic prompts draw ids below
// `vocab`. Throws Error naming the workload's path.
std::vector<Request> workload_requests(const Workload& workload, int64_t vocab);
// When each of `count` requests is submitted, in seconds from the start (non-decreasing;
// all zeros for ArrivalKind::All). Deterministic: the same arrival gives the same times.
std::vector<double> arrival_times_s(const WorkloadArrival& arrival, size_t count);

}  // namespace lorascope
