// Engine options shared by the commands that run the engine (generate, bench).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "lorascope/engine.h"

namespace lorascope::cli {

// --model --threads --device --dtype --max-batch-size --max-batch-tokens --adapter
// --adapter-memory-budget --profile FILE (LibTorch 2.x: device kernels and engine steps, as JSON)
// --batching continuous|static --prefill-budget TOKENS --prefill-chunk TOKENS --tpot-target-ms MS --tpot-tail-share S
std::vector<std::string> engine_option_names();
EngineOptions engine_options_from(const Args& args);
// What the KV cache stores under these options: kv_cache_dtype, or what "auto" picks (on the CPU
// per compute type, runtime.h's cpu_compute_types(); elsewhere the model's dtype).
std::string kv_cache_dtype_in_effect(const EngineOptions& options);
// Creates the engine and loads every `--adapter NAME=DIR` (an adapter that fails to load is an
// error naming it: the caller asked for it explicitly). With --profile, the engine returned counts
// device kernel launches and steps until it is destroyed, then writes them to the file.
std::unique_ptr<Engine> create_engine_with_adapters(const Args& args, const EngineOptions& options);

}  // namespace lorascope::cli
