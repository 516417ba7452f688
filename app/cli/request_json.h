// One JSON Lines request ({"id", "prompt"|"input_ids"|"messages", "adapter", "params"}, and the
// fields of issue 32 below) as an engine Request; "messages" (with optional "tools" and
// "chat_template_kwargs") make a conversation. Torch-free, so that the libFuzzer target for request
// lines (tests/fuzz) runs it without an engine.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "lorascope/engine.h"

namespace lorascope::cli {

// Unknown fields, wrong types and bad params are Error(InvalidArgument) whose path is `source`
// (e.g. "line 3"). `line_text`, the line the request was parsed from, gives a conversation its
// objects' key order as written (a parsed nlohmann::json sorts keys; templates print tool schemas
// in the order given); without it, keys come sorted. Besides those fields: "merged_adapters"
// (lorascope/adapter.h's AdapterMerge, LoRAX's field names), "target" | "target_ids" (what
// prompt_logprobs score on an encoder-decoder model) and "adapter_source" (see local_adapter_path).
Request parse_request(const nlohmann::json& request, const std::string& source, std::string_view line_text = {});

// "adapter_source": "local" makes "adapter" a path under the allowed adapter directory (the
// caller resolves and loads it: lorascope/local_adapters.h); absent or "registered": a loaded
// adapter's name. Returns that path for "local"; other sources are Error(InvalidArgument).
std::optional<std::string> local_adapter_path(const nlohmann::json& request, const std::string& source);

}  // namespace lorascope::cli
