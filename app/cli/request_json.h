// One JSON Lines request ({"id", "prompt"|"input_ids"|"messages", "adapter", "params"}) as an
// engine Request; "messages" (with optional "tools" and "chat_template_kwargs") make a conversation.
// Torch-free, so that the libFuzzer target for request lines (tests/fuzz) runs it without an engine.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "lorascope/engine.h"

namespace lorascope::cli {

// Unknown fields, wrong types and bad params are Error(InvalidArgument) whose path is `source`
// (e.g. "line 3"). `line_text`, the line the request was parsed from, gives a conversation its
// objects' key order as written (a parsed nlohmann::json sorts keys; templates print tool schemas
// in the order given); without it, keys come sorted.
Request parse_request(const nlohmann::json& request, const std::string& source, std::string_view line_text = {});

}  // namespace lorascope::cli
