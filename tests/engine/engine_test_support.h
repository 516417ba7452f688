// What the engine tests share: the oracle's model variants and their records, and small request
// and engine builders.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "lorascope/engine.h"
#include "test_env.h"

namespace lorascope::test {

struct Variant {
    std::string dir;
    nlohmann::json records;
};

// <oracle>/<kind>/<name>/records.json and the model directory it names ("model_dir"), written by
// the oracle step `step`.
inline Variant load_oracle_model(const std::string& kind, const std::string& name, const std::string& step) {
    const std::string root = oracle_dir() + "/" + kind + "/" + name;
    std::ifstream in(root + "/records.json");
    if (!in) throw std::runtime_error("missing oracle records " + root + "/records.json (run the " + step + " step)");
    Variant v;
    in >> v.records;
    v.dir = root + "/" + v.records["model_dir"].get<std::string>();
    return v;
}

inline Variant load_variant(const std::string& name) { return load_oracle_model("models", name, "oracle_models"); }

inline Request greedy_request(const nlohmann::json& prompt, int64_t max_new_tokens) {
    Request r;
    r.input_ids = prompt.get<std::vector<int64_t>>();
    r.params.max_new_tokens = max_new_tokens;
    return r;
}

inline EngineOptions engine_options(const std::string& dir, int64_t max_batch_size = 32) {
    EngineOptions options;
    options.model_dir = dir;
    options.threads = 1;
    options.max_batch_size = max_batch_size;
    return options;
}

inline std::unique_ptr<Engine> make_engine(const std::string& dir, int64_t max_batch_size = 32) {
    return Engine::create(engine_options(dir, max_batch_size));
}

}  // namespace lorascope::test
