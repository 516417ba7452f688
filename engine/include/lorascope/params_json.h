// GenerationParams from an already parsed JSON object: the CLI's request lines and `serve`'s
// request bodies are parsed whole (bounded, lorascope/json_input.h), and re-serialising their
// "params" only to parse them again would be waste. The same rules as parse_generation_params.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lorascope/params.h"

namespace lorascope {

// Unknown fields, wrong types and out-of-range values (check_generation_params) are
// Error(InvalidArgument, source, "... naming the field ..."). `object` should come from
// parse_json_input, so that its depth is bounded.
GenerationParams generation_params_from_json(const nlohmann::json& object, const std::string& source,
                                             const ParamLimits& limits = {});

}  // namespace lorascope
