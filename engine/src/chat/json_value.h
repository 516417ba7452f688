// JSON text to template values with Python's json.loads meaning: objects keep their key order
// (templates print tool schemas in the order given), integers stay integers, floats floats.
// Bounded like the render: nesting beyond max_depth and integers beyond 64 bits are refused.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat/value.h"

namespace lorascope::chat {

using OrderedJson = nlohmann::ordered_json;

// Parses JSON text; Error(InvalidArgument) naming `origin` and `what` (e.g. "tools") on bad input.
OrderedJson parse_json_text(const std::string& text, const std::string& origin, const std::string& what);
Value json_to_value(const OrderedJson& json, int max_depth, const std::string& origin, const std::string& what);

}  // namespace lorascope::chat
