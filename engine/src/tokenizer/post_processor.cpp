#include "tokenizer/post_processor.h"

#include "lorascope/error.h"

#include <nlohmann/json.hpp>

namespace lorascope::tokenizer {

namespace {

int64_t pair_id(const nlohmann::json& pair, const std::string& path, const char* what) {
    // ["</s>", 2]
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer())
        throw Error(ErrorKind::Format, path, std::string("post_processor ") + what + " should be [token, id]");
    return pair[1].get<int64_t>();
}

void add_json(PostProcessor& p, const nlohmann::json& config, const std::string& path) {
    if (config.is_null()) return;
    const std::string type = config.value("type", "");
    if (type == "Sequence") {
        for (const auto& step : config.at("processors")) add_json(p, step, path);
        return;
    }
    if (type == "ByteLevel") return;  // only adjusts offsets
    p.name = type;
    if (type == "RobertaProcessing" || type == "BertProcessing") {
        p.prefix = {pair_id(config.at("cls"), path, "cls")};
        p.suffix = {pair_id(config.at("sep"), path, "sep")};
        return;
    }
    if (type == "TemplateProcessing") {
        const auto& specials = config.at("special_tokens");
        p.prefix.clear();
        p.suffix.clear();
        bool seen_sequence = false;
        for (const auto& item : config.at("single")) {
            if (item.contains("Sequence")) {
                seen_sequence = true;
            } else if (item.contains("SpecialToken")) {
                const std::string name = item["SpecialToken"].at("id").get<std::string>();
                if (!specials.contains(name))
                    throw Error(ErrorKind::Format, path, "post_processor template names undefined special token '" + name + "'");
                for (const auto& id : specials[name].at("ids")) (seen_sequence ? p.suffix : p.prefix).push_back(id.get<int64_t>());
            } else {
                throw Error(ErrorKind::Format, path, "post_processor template item " + item.dump() + " is not understood");
            }
        }
        return;
    }
    throw Error(ErrorKind::Unsupported, path, "post_processor of type '" + type + "' is not supported");
}

}  // namespace

PostProcessor PostProcessor::from_json(const nlohmann::json& config, const std::string& path) {
    PostProcessor p;
    try {
        add_json(p, config, path);
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::Format, path, std::string("malformed post_processor: ") + e.what());
    }
    return p;
}

void PostProcessor::apply(std::vector<int64_t>& ids) const {
    if (!prefix.empty()) ids.insert(ids.begin(), prefix.begin(), prefix.end());
    ids.insert(ids.end(), suffix.begin(), suffix.end());
}

}  // namespace lorascope::tokenizer
