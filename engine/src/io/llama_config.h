// config.json of the Llama family (model_type llama, mistral, qwen2) into LlamaConfig, with the
// defaults and quirks of transformers 4.46's LlamaConfig, MistralConfig and Qwen2Config.
// Kept apart from io/config.cpp so that each family's reader is one file.
#pragma once

#include <string>

#include "lorascope/config.h"
#include "util/json_read.h"

namespace lorascope::io {

bool is_llama_model_type(const std::string& model_type);

// Throws lorascope::Error (Format) naming the file and field for malformed or inconsistent values,
// (Unsupported) for options transformers itself cannot load.
LlamaConfig parse_llama_config(const json::ObjectReader& r, const std::string& model_type);
void validate_llama_config(const LlamaConfig& c, const json::ObjectReader& r);

// GenerationConfig.from_model_config's token ids for this family, written into `merged` (the
// config.json object that load_generation_config reads as a generation config).
void set_llama_generation_ids(const LlamaConfig& c, json::Json& merged);

}  // namespace lorascope::io
