// The tiny model variants tests/oracle/models_oracle.py builds (with llama_variants.py and
// seq2seq_variants.py), by name:
// what the model-level and engine-level parity tests iterate over.
#pragma once

#include <string>
#include <vector>

namespace lorascope::test {

inline const std::vector<std::string>& model_variants() {
    static const std::vector<std::string> names = {
        "t5_v1_0", "t5_v1_1", "bart_plain", "bart_scaled_bare", "bart_heads_differ", "bloom_4h", "bloom_6h_postln",
        "llama_gqa", "llama_mqa_bias_tied_linear", "llama_dynamic", "llama_llama3", "llama_yarn", "llama_longrope",
        "mistral_window", "mistral_mqa_tied", "qwen2_gqa_tied_yarn", "qwen2_window_dynamic",
        // issue 30: tests/oracle/seq2seq_variants.py
        "mt5_gated", "mt5_tied", "marian_shared", "marian_separate", "mbart_plain", "mbart_forced_lang",
        "pegasus_table_in_file", "pegasus_computed_table", "m2m100_grown_table", "m2m100_untied"};
    return names;
}

// The Llama-family variants of tests/oracle/llama_variants.py.
inline bool is_llama_variant(const std::string& name) {
    return name.rfind("llama_", 0) == 0 || name.rfind("mistral_", 0) == 0 || name.rfind("qwen2_", 0) == 0;
}

}  // namespace lorascope::test
