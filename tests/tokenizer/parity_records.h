// Reads the tokenizer oracle's records (tests/oracle/tokenizers_oracle.py).
#pragma once

#include "test_env.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

namespace lorascope::test {

inline std::string tokenizer_record_path(const std::string& name) {
    return oracle_dir() + "/tokenizers/" + name + ".json";
}

inline nlohmann::json read_tokenizer_record(const std::string& name) {
    std::ifstream in(tokenizer_record_path(name), std::ios::binary);
    if (!in) return nlohmann::json();
    std::stringstream buffer;
    buffer << in.rdbuf();
    return nlohmann::json::parse(buffer.str());
}

// Records for the real files exist only where the shared tokenizer folder does.
inline bool needs_shared_folder(const std::string& name) { return name != "bloom_style"; }

}  // namespace lorascope::test
