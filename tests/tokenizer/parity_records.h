// Reads the tokenizer oracle's records (tests/oracle/tokenizers_oracle.py).
#pragma once

#include "test_env.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// Every tokenizer the oracles record (tokenizers_oracle.py, seq2seq_tokenizers_oracle.py).
inline const std::vector<std::string>& tokenizer_record_names() {
    static const std::vector<std::string> names = {
        // trained by the oracle
        "bloom_style", "llama3_style", "qwen2_style", "mt5_json", "mt5_model", "marian", "marian_separate", "mbart50_json",
        "mbart50_model", "nllb_json", "nllb_legacy_json", "nllb_model", "pegasus_json", "pegasus_model",
        // real files in ../shared/tokenizers
        "t5", "t5_spiece", "bart_json", "bart_vocab_merges", "gpt2", "mistral_v1_json", "mistral_v1_model",
        "mistral_v1_legacy_json", "mistral_v1_legacy_model", "mistral_v1_prefix_json", "mistral_v1_prefix_model",
        "mistral_v1_legacy_prefix_json", "mistral_v1_legacy_prefix_model", "mistral_v3_json", "mistral_v3_model",
        "mistral_v1_bare"};
    return names;
}

// Records for the real files exist only where the shared tokenizer folder does.
inline bool needs_shared_folder(const std::string& name) {
    const auto& names = tokenizer_record_names();
    return std::find(names.begin(), names.end(), "t5") <= std::find(names.begin(), names.end(), name);
}

}  // namespace lorascope::test
