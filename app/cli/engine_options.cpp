#include "engine_options.h"

#include "lorascope/error.h"

namespace lorascope::cli {

std::vector<std::string> engine_option_names() {
    return {"model", "threads", "device", "dtype", "max-batch-size", "max-batch-tokens", "adapter",
            "adapter-memory-budget"};
}

EngineOptions engine_options_from(const Args& args) {
    EngineOptions options;
    options.model_dir = args.require("model");
    options.threads = static_cast<int>(args.get_int("threads", 0));
    options.device = args.get_or("device", "cpu");
    options.dtype = args.get_or("dtype", "float32");
    options.max_batch_size = args.get_int("max-batch-size", options.max_batch_size);
    options.max_batch_tokens = args.get_int("max-batch-tokens", options.max_batch_tokens);
    options.adapter_memory_budget = args.get_int("adapter-memory-budget", 0);
    if (options.adapter_memory_budget < 0)
        throw Error(ErrorKind::InvalidArgument, "--adapter-memory-budget must be >= 0 (bytes; 0 = unlimited)");
    if (options.threads < 0) throw Error(ErrorKind::InvalidArgument, "--threads must be >= 0");
    if (options.max_batch_size < 1) throw Error(ErrorKind::InvalidArgument, "--max-batch-size must be >= 1");
    if (options.max_batch_tokens < 1) throw Error(ErrorKind::InvalidArgument, "--max-batch-tokens must be >= 1");
    return options;
}

std::unique_ptr<Engine> create_engine_with_adapters(const Args& args, const EngineOptions& options) {
    auto engine = Engine::create(options);
    for (const auto& spec : args.all("adapter")) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            throw Error(ErrorKind::InvalidArgument, "--adapter expects NAME=DIR, got '" + spec + "'");
        engine->load_adapter(spec.substr(0, eq), spec.substr(eq + 1));
    }
    return engine;
}

}  // namespace lorascope::cli
