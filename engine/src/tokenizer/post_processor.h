// The ids a post-processor wraps around one encoded sequence (T5: + </s>; BART: <s> + ... + </s>).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace lorascope::tokenizer {

struct PostProcessor {
    std::vector<int64_t> prefix, suffix;
    std::string name = "none";

    // tokenizer.json's "post_processor": null, ByteLevel, RobertaProcessing, BertProcessing,
    // TemplateProcessing, or a Sequence of them; anything else is Error(Unsupported) naming path.
    static PostProcessor from_json(const nlohmann::json& config, const std::string& path);
    void apply(std::vector<int64_t>& ids) const;
};

}  // namespace lorascope::tokenizer
