// One JSON Lines request ({"id", "prompt"|"input_ids", "adapter", "params"}) as an engine
// Request. Torch-free, so that the libFuzzer target for request lines (tests/fuzz) runs it
// without an engine.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "lorascope/engine.h"

namespace lorascope::cli {

// Unknown fields, wrong types and bad params are Error(InvalidArgument) whose path is `source`
// (e.g. "line 3").
Request parse_request(const nlohmann::json& request, const std::string& source);

}  // namespace lorascope::cli
