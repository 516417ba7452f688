#include "util/paths.h"
#include "tokenizer/hf_tokenizer_config.h"

#include "lorascope/error.h"
#include "lorascope/json_input.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace lorascope::tokenizer {

nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::NotFound, path, "cannot open file");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return parse_json_input(buffer.str(), path);
}

bool file_exists(const std::string& path) { return paths::is_regular_file(path); }

const char* to_string(TokenizerFamily family) {
    switch (family) {
        case TokenizerFamily::T5: return "t5";
        case TokenizerFamily::Bart: return "bart";
        case TokenizerFamily::Gpt2: return "gpt2";
        case TokenizerFamily::Bloom: return "bloom";
        case TokenizerFamily::Unknown: break;
    }
    return "unknown";
}

TokenizerFamily family_from_names(const std::string& tokenizer_class, const std::string& model_type) {
    std::string cls = tokenizer_class;
    std::transform(cls.begin(), cls.end(), cls.begin(), [](unsigned char c) { return std::tolower(c); });
    auto starts = [&](const char* prefix) { return cls.rfind(prefix, 0) == 0; };
    if (starts("t5") || starts("mt5")) return TokenizerFamily::T5;
    if (starts("bart") || starts("roberta")) return TokenizerFamily::Bart;
    if (starts("gpt2")) return TokenizerFamily::Gpt2;
    if (starts("bloom")) return TokenizerFamily::Bloom;
    if (model_type == "t5" || model_type == "mt5") return TokenizerFamily::T5;
    if (model_type == "bart" || model_type == "roberta") return TokenizerFamily::Bart;
    if (model_type == "gpt2") return TokenizerFamily::Gpt2;
    if (model_type == "bloom") return TokenizerFamily::Bloom;
    return TokenizerFamily::Unknown;
}

namespace {

const char* const kSpecialKeys[] = {"bos_token", "eos_token", "unk_token", "pad_token",
                                    "mask_token", "sep_token", "cls_token"};

// A special token written as a string or as an AddedToken dict; special ones default to
// normalized=false like transformers' AddedToken(special=True).
std::optional<AddedToken> parse_token(const nlohmann::json& value, const std::string& path) {
    AddedToken token;
    token.special = true;
    if (value.is_string()) {
        token.content = value.get<std::string>();
    } else if (value.is_object() && value.contains("content") && value["content"].is_string()) {
        token.content = value["content"].get<std::string>();
        token.lstrip = value.value("lstrip", false);
        token.rstrip = value.value("rstrip", false);
        token.single_word = value.value("single_word", false);
        token.normalized = value.value("normalized", false);
        token.special = value.value("special", true);
    } else if (value.is_null()) {
        return std::nullopt;
    } else {
        throw Error(ErrorKind::Format, path, "special token " + value.dump() + " is neither a string nor an AddedToken");
    }
    if (token.content.empty()) return std::nullopt;
    return token;
}

void read_special_tokens(const nlohmann::json& json, const std::string& path, HfTokenizerConfig& config) {
    for (const char* key : kSpecialKeys) {
        if (!json.contains(key)) continue;
        if (auto token = parse_token(json[key], path)) config.special_tokens[key] = *token;
        else config.special_tokens.erase(key);
    }
    if (json.contains("additional_special_tokens") && json["additional_special_tokens"].is_array()) {
        config.additional_special_tokens.clear();
        for (const auto& value : json["additional_special_tokens"])
            if (auto token = parse_token(value, path)) config.additional_special_tokens.push_back(*token);
    }
}

}  // namespace

HfTokenizerConfig read_hf_tokenizer_config(const std::string& dir) {
    HfTokenizerConfig config;
    const std::string tc_path = dir + "/tokenizer_config.json";
    if (file_exists(tc_path)) interpreting(tc_path, [&] {
        const nlohmann::json tc = read_json_file(tc_path);
        if (!tc.is_object()) throw Error(ErrorKind::Format, tc_path, "expected a JSON object");
        if (tc.contains("tokenizer_class") && tc["tokenizer_class"].is_string())
            config.tokenizer_class = tc["tokenizer_class"].get<std::string>();
        if (tc.contains("clean_up_tokenization_spaces") && tc["clean_up_tokenization_spaces"].is_boolean())
            config.clean_up_tokenization_spaces = tc["clean_up_tokenization_spaces"].get<bool>();
        if (tc.contains("add_prefix_space") && tc["add_prefix_space"].is_boolean())
            config.add_prefix_space = tc["add_prefix_space"].get<bool>();
        if (tc.contains("extra_ids") && tc["extra_ids"].is_number_integer()) config.extra_ids = tc["extra_ids"].get<int>();
        read_special_tokens(tc, tc_path, config);
        if (tc.contains("added_tokens_decoder") && tc["added_tokens_decoder"].is_object()) {
            for (const auto& [key, value] : tc["added_tokens_decoder"].items()) {
                auto token = parse_token(value, tc_path);
                if (!token) continue;
                try {
                    token->id = std::stoll(key);
                } catch (const std::exception&) {
                    throw Error(ErrorKind::Format, tc_path, "added_tokens_decoder key '" + key + "' is not an id");
                }
                config.added_tokens_decoder.push_back(*token);
            }
            std::sort(config.added_tokens_decoder.begin(), config.added_tokens_decoder.end(),
                      [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
        }
    });
    const std::string stm_path = dir + "/special_tokens_map.json";
    if (file_exists(stm_path)) interpreting(stm_path, [&] {
        const nlohmann::json stm = read_json_file(stm_path);
        if (!stm.is_object()) throw Error(ErrorKind::Format, stm_path, "expected a JSON object");
        read_special_tokens(stm, stm_path, config);
    });
    const std::string cfg_path = dir + "/config.json";
    if (file_exists(cfg_path)) {
        const nlohmann::json cfg = read_json_file(cfg_path);
        if (cfg.is_object()) {
            if (cfg.contains("model_type") && cfg["model_type"].is_string()) config.model_type = cfg["model_type"].get<std::string>();
            if (cfg.contains("decoder_start_token_id") && cfg["decoder_start_token_id"].is_number_integer())
                config.decoder_start_token_id = cfg["decoder_start_token_id"].get<int64_t>();
        }
    }
    config.family = family_from_names(config.tokenizer_class, config.model_type);
    return config;
}

void apply_family_defaults(HfTokenizerConfig& config) {
    auto set_default = [&](const char* key, const char* content, bool lstrip = false, bool normalized = false) {
        if (config.special_tokens.count(key)) return;
        AddedToken token;
        token.content = content;
        token.special = true;
        token.lstrip = lstrip;
        token.normalized = normalized;
        config.special_tokens[key] = token;
    };
    switch (config.family) {
        case TokenizerFamily::T5:
            set_default("eos_token", "</s>");
            set_default("unk_token", "<unk>");
            set_default("pad_token", "<pad>");
            break;
        case TokenizerFamily::Bart:
            set_default("bos_token", "<s>");
            set_default("eos_token", "</s>");
            set_default("sep_token", "</s>");
            set_default("cls_token", "<s>");
            set_default("unk_token", "<unk>");
            set_default("pad_token", "<pad>");
            // BartTokenizer(Fast) makes <mask> swallow the space before it.
            set_default("mask_token", "<mask>", /*lstrip=*/true, /*normalized=*/true);
            break;
        case TokenizerFamily::Gpt2:
            set_default("bos_token", "<|endoftext|>");
            set_default("eos_token", "<|endoftext|>");
            set_default("unk_token", "<|endoftext|>");
            break;
        case TokenizerFamily::Bloom:
            set_default("bos_token", "<s>");
            set_default("eos_token", "</s>");
            set_default("unk_token", "<unk>");
            set_default("pad_token", "<pad>");
            break;
        case TokenizerFamily::Unknown:
            break;
    }
}

}  // namespace lorascope::tokenizer
