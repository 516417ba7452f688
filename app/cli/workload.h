// The bench workload file (lorascope-cli bench --workload), parsed without an engine: torch-free,
// so that its libFuzzer target (tests/fuzz) runs it alone. Every problem is a lorascope::Error
// naming the file.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::cli {

struct Workload {
    std::string path;
    nlohmann::json document;
    std::string name;                 // "name", else the file's path
    nlohmann::json arrival;           // as written, for the report; {"kind": "all"} when absent
    bool poisson = false;             // arrival kind "poisson" (else "all": everything at once)
    double rate = 1.0;                // poisson arrivals per second
    uint64_t seed = 0;                // poisson gaps
};

Workload read_workload(const std::string& path);
Workload parse_workload(const std::string& text, const std::string& path);

// The requests the workload describes; synthetic prompts draw ids below `vocab`.
std::vector<Request> workload_requests(const Workload& workload, int64_t vocab);

}  // namespace lorascope::cli
