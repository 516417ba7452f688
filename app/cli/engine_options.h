// Engine options shared by the commands that run the engine (generate, bench).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "lorascope/engine.h"

namespace lorascope::cli {

// --model --threads --device --dtype --max-batch-size --max-batch-tokens --adapter
// --adapter-memory-budget
std::vector<std::string> engine_option_names();
EngineOptions engine_options_from(const Args& args);
// Creates the engine and loads every `--adapter NAME=DIR` (an adapter that fails to load is an
// error naming it: the caller asked for it explicitly).
std::unique_ptr<Engine> create_engine_with_adapters(const Args& args, const EngineOptions& options);

}  // namespace lorascope::cli
