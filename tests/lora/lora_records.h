// Reading what tests/oracle/lora_oracle.py writes: per base model, the prompts and, for the base
// and each adapter ("runs"), HF + PEFT greedy tokens and the raw logits of the first steps.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace lorascope::test {

inline const std::vector<std::string>& lora_bases() {
    static const std::vector<std::string> names = {"t5", "t5_gated", "bart", "bloom", "llama", "mistral", "qwen2",
                                                   // issue 30: tests/oracle/seq2seq_variants.py
                                                   "mt5", "marian", "mbart", "pegasus", "m2m100"};
    return names;
}

struct LoraBase {
    std::string name;
    std::string dir;         // <oracle>/lora/<name>
    std::string model_dir;   // .../model
    nlohmann::json records;

    // Adapter name -> directory, for every run that has one.
    std::string adapter_dir(const std::string& adapter) const;
    std::vector<std::string> adapter_names() const;
};

// Throws std::runtime_error naming the file when the oracle output is missing (tests must fail).
LoraBase load_lora_base(const std::string& name);
std::string broken_adapter_dir(const std::string& name);   // <oracle>/lora/broken/<name>

}  // namespace lorascope::test
