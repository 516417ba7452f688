// GenerationParams from an already parsed JSON object (the CLI and the engine parse whole
// request lines with nlohmann::json; re-serialising "params" just to parse it again is waste).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lorascope/params.h"

namespace lorascope::sampling {

// Same rules as lorascope::parse_generation_params: unknown fields, wrong types and
// out-of-range values are Error(InvalidArgument, source, "... naming the field ...").
GenerationParams generation_params_from_json(const nlohmann::json& object, const std::string& source);

// The JSON form of params (only the fields that are set), e.g. to echo a request back.
nlohmann::json to_json(const GenerationParams& params);

}  // namespace lorascope::sampling
