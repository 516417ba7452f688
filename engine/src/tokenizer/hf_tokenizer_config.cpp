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
        case TokenizerFamily::Llama: return "llama";
        case TokenizerFamily::Qwen2: return "qwen2";
        case TokenizerFamily::MBart50: return "mbart-50";
        case TokenizerFamily::Nllb: return "nllb";
        case TokenizerFamily::Pegasus: return "pegasus";
        case TokenizerFamily::Marian: return "marian";
        case TokenizerFamily::Unknown: break;
    }
    return "unknown";
}

TokenizerFamily family_from_names(const std::string& tokenizer_class, const std::string& model_type) {
    std::string cls = tokenizer_class;
    std::transform(cls.begin(), cls.end(), cls.begin(), [](unsigned char c) { return std::tolower(c); });
    static const std::pair<const char*, TokenizerFamily> kClasses[] = {
        {"t5", TokenizerFamily::T5}, {"mt5", TokenizerFamily::T5}, {"bart", TokenizerFamily::Bart},
        {"roberta", TokenizerFamily::Bart}, {"gpt2", TokenizerFamily::Gpt2}, {"bloom", TokenizerFamily::Bloom},
        {"llama", TokenizerFamily::Llama}, {"codellama", TokenizerFamily::Llama}, {"qwen2", TokenizerFamily::Qwen2},
        {"mbart50", TokenizerFamily::MBart50}, {"nllb", TokenizerFamily::Nllb}, {"pegasus", TokenizerFamily::Pegasus},
        {"marian", TokenizerFamily::Marian}};
    for (const auto& [prefix, family] : kClasses)
        if (cls.rfind(prefix, 0) == 0) return family;
    // model_type alone: only where one tokenizer class serves the type (not mbart, m2m_100).
    static const std::pair<const char*, TokenizerFamily> kTypes[] = {
        {"t5", TokenizerFamily::T5}, {"mt5", TokenizerFamily::T5}, {"bart", TokenizerFamily::Bart},
        {"roberta", TokenizerFamily::Bart}, {"gpt2", TokenizerFamily::Gpt2}, {"bloom", TokenizerFamily::Bloom},
        {"llama", TokenizerFamily::Llama}, {"mistral", TokenizerFamily::Llama}, {"qwen2", TokenizerFamily::Qwen2},
        {"pegasus", TokenizerFamily::Pegasus}, {"marian", TokenizerFamily::Marian}};
    for (const auto& [type, family] : kTypes)
        if (model_type == type) return family;
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
        if (auto token = parse_token(json[key], path)) {
            config.special_tokens[key] = *token;
            config.null_special_tokens.erase(key);
        } else {
            config.special_tokens.erase(key);
            if (json[key].is_null()) config.null_special_tokens.insert(key);
        }
    }
    if (json.contains("additional_special_tokens") && json["additional_special_tokens"].is_array()) {
        config.additional_special_tokens.clear();
        for (const auto& value : json["additional_special_tokens"])
            if (auto token = parse_token(value, path)) config.additional_special_tokens.push_back(*token);
    }
}

void read_chat_templates(const nlohmann::json& value, HfTokenizerConfig& config) {
    if (value.is_null()) return;
    if (value.is_string()) {
        config.chat_templates.emplace_back("", value.get<std::string>());
        return;
    }
    if (!value.is_array()) {
        config.chat_template_error = "\"chat_template\" is neither a string nor a list of {\"name\", \"template\"}";
        return;
    }
    config.chat_templates_named = true;
    for (const auto& item : value) {
        if (!item.is_object() || !item.contains("name") || !item["name"].is_string() || !item.contains("template") ||
            !item["template"].is_string()) {
            config.chat_templates.clear();
            config.chat_template_error = "an entry of \"chat_template\" is not {\"name\": string, \"template\": string}";
            return;
        }
        const std::string name = item["name"].get<std::string>();
        const auto same = std::find_if(config.chat_templates.begin(), config.chat_templates.end(),
                                       [&](const auto& t) { return t.first == name; });
        if (same != config.chat_templates.end()) same->second = item["template"].get<std::string>();
        else config.chat_templates.emplace_back(name, item["template"].get<std::string>());
    }
}

// The keyword arguments of the classes beyond BART/T5's that change what a tokenizer does.
void read_class_options(const nlohmann::json& tc, HfTokenizerConfig& config) {
    auto flag = [&](const char* key) -> std::optional<bool> {
        if (tc.contains(key) && tc[key].is_boolean()) return tc[key].get<bool>();
        return std::nullopt;
    };
    auto text = [&](const char* key) -> std::optional<std::string> {
        if (tc.contains(key) && tc[key].is_string()) return tc[key].get<std::string>();
        return std::nullopt;
    };
    config.legacy = flag("legacy");
    config.add_bos_token = flag("add_bos_token");
    config.add_eos_token = flag("add_eos_token");
    config.legacy_behaviour = flag("legacy_behaviour").value_or(false);
    config.separate_vocabs = flag("separate_vocabs").value_or(false);
    config.src_lang = text("src_lang");
    config.tgt_lang = text("tgt_lang");
    config.mask_token_sent = text("mask_token_sent");
    config.mask_token_sent_null = tc.contains("mask_token_sent") && tc["mask_token_sent"].is_null();
    if (tc.contains("offset") && tc["offset"].is_number_integer()) config.offset = tc["offset"].get<int>();
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
        config.add_prefix_space_null = tc.contains("add_prefix_space") && tc["add_prefix_space"].is_null();
        if (tc.contains("extra_ids") && tc["extra_ids"].is_number_integer()) config.extra_ids = tc["extra_ids"].get<int>();
        read_class_options(tc, config);
        read_special_tokens(tc, tc_path, config);
        if (tc.contains("chat_template")) read_chat_templates(tc["chat_template"], config);
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
    // Each class's defaults for special tokens the files leave out (not those they set to null).
    struct Default {
        TokenizerFamily family;
        const char* key;
        const char* content;
        bool lstrip_normalized = false;  // <mask> of BART, mBART-50 and NLLB swallows the space before it
    };
    using F = TokenizerFamily;
    static const Default kDefaults[] = {
        {F::T5, "eos_token", "</s>"}, {F::T5, "unk_token", "<unk>"}, {F::T5, "pad_token", "<pad>"},
        {F::Gpt2, "bos_token", "<|endoftext|>"}, {F::Gpt2, "eos_token", "<|endoftext|>"}, {F::Gpt2, "unk_token", "<|endoftext|>"},
        {F::Bloom, "bos_token", "<s>"}, {F::Bloom, "eos_token", "</s>"}, {F::Bloom, "unk_token", "<unk>"},
        {F::Bloom, "pad_token", "<pad>"},
        {F::Llama, "bos_token", "<s>"}, {F::Llama, "eos_token", "</s>"}, {F::Llama, "unk_token", "<unk>"},
        {F::Qwen2, "eos_token", "<|endoftext|>"}, {F::Qwen2, "unk_token", "<|endoftext|>"}, {F::Qwen2, "pad_token", "<|endoftext|>"},
        {F::Pegasus, "pad_token", "<pad>"}, {F::Pegasus, "eos_token", "</s>"}, {F::Pegasus, "unk_token", "<unk>"},
        {F::Pegasus, "mask_token", "<mask_2>"},
        {F::Marian, "unk_token", "<unk>"}, {F::Marian, "eos_token", "</s>"}, {F::Marian, "pad_token", "<pad>"},
    };
    // BART, mBART-50 and NLLB share fairseq's specials (mBART-50 has no bos_token).
    static const Default kFairseq[] = {{F::Unknown, "eos_token", "</s>"}, {F::Unknown, "sep_token", "</s>"},
                                       {F::Unknown, "cls_token", "<s>"},  {F::Unknown, "unk_token", "<unk>"},
                                       {F::Unknown, "pad_token", "<pad>"}, {F::Unknown, "mask_token", "<mask>", true}};
    auto set_default = [&](const Default& d) {
        if (config.special_tokens.count(d.key) || config.null_special_tokens.count(d.key)) return;
        AddedToken token;
        token.content = d.content;
        token.special = true;
        token.lstrip = token.normalized = d.lstrip_normalized;
        config.special_tokens[d.key] = token;
    };
    for (const Default& d : kDefaults)
        if (d.family == config.family) set_default(d);
    const F f = config.family;
    if (f == F::Bart || f == F::MBart50 || f == F::Nllb) {
        for (const Default& d : kFairseq) set_default(d);
        if (f != F::MBart50) set_default({f, "bos_token", "<s>"});
    }
    if (f == F::Pegasus && !config.mask_token_sent && !config.mask_token_sent_null) config.mask_token_sent = "<mask_1>";
}

}  // namespace lorascope::tokenizer
