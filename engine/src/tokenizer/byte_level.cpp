#include "tokenizer/byte_level.h"

#include "lorascope/error.h"
#include "tokenizer/split_patterns.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <unordered_map>

namespace lorascope::tokenizer {

namespace {

std::array<std::string, 256> make_byte_to_char() {
    std::array<std::string, 256> table;
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
        utf8_append(table[static_cast<size_t>(b)], cp);
    }
    return table;
}

}  // namespace

const std::array<std::string, 256>& byte_to_char() {
    static const std::array<std::string, 256> table = make_byte_to_char();
    return table;
}

std::optional<unsigned char> char_to_byte(char32_t cp) {
    static const std::unordered_map<char32_t, unsigned char> inverse = [] {
        std::unordered_map<char32_t, unsigned char> map;
        for (int b = 0; b < 256; ++b) {
            size_t len;
            map.emplace(utf8_next(byte_to_char()[static_cast<size_t>(b)], 0, &len), static_cast<unsigned char>(b));
        }
        return map;
    }();
    auto it = inverse.find(cp);
    if (it == inverse.end()) return std::nullopt;
    return it->second;
}

std::string bytes_to_byte_level(std::string_view bytes) {
    const auto& table = byte_to_char();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += table[static_cast<unsigned char>(c)];
    return out;
}

ByteLevelPreTokenizer ByteLevelPreTokenizer::gpt2(bool add_prefix_space) {
    ByteLevelPreTokenizer p;
    if (add_prefix_space) p.steps_.push_back(Step{StepKind::PrefixSpace, SplitPattern::Gpt2});
    p.steps_.push_back(Step{StepKind::Split, SplitPattern::Gpt2});
    return p;
}

void ByteLevelPreTokenizer::add_json(const nlohmann::json& config, const std::string& path, bool* has_byte_level) {
    const std::string type = config.value("type", "");
    if (type == "Sequence") {
        for (const auto& step : config.at("pretokenizers")) add_json(step, path, has_byte_level);
    } else if (type == "ByteLevel") {
        *has_byte_level = true;
        if (config.value("add_prefix_space", false)) steps_.push_back(Step{StepKind::PrefixSpace, SplitPattern::Gpt2});
        if (config.value("use_regex", true)) steps_.push_back(Step{StepKind::Split, SplitPattern::Gpt2});
    } else if (type == "Split") {
        const auto& pattern = config.at("pattern");
        const std::string regex = pattern.contains("Regex") ? pattern["Regex"].get<std::string>() : std::string();
        const std::string behavior = config.value("behavior", "");
        const auto known = split_pattern_from_regex(regex);
        if (config.value("invert", false) || behavior != "Isolated" || !known) {
            throw Error(ErrorKind::Unsupported, path,
                        "pre_tokenizer Split with pattern " + pattern.dump() + ", behavior " + behavior +
                        " is not supported (only the GPT-2, BLOOM, Llama 3 and Qwen2 patterns, Isolated, not inverted)");
        }
        steps_.push_back(Step{StepKind::Split, *known});
    } else {
        throw Error(ErrorKind::Unsupported, path, "pre_tokenizer of type '" + type + "' is not supported for byte-level BPE");
    }
}

ByteLevelPreTokenizer ByteLevelPreTokenizer::from_json(const nlohmann::json& config, const std::string& path) {
    ByteLevelPreTokenizer p;
    bool has_byte_level = false;
    if (config.is_object()) p.add_json(config, path, &has_byte_level);
    if (!has_byte_level) {
        throw Error(ErrorKind::Unsupported, path, "pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
    }
    return p;
}

std::vector<std::string> ByteLevelPreTokenizer::split(std::string_view text) const {
    std::vector<std::string> pieces{std::string(text)};
    for (Step step : steps_) {
        std::vector<std::string> next;
        next.reserve(pieces.size());
        for (const std::string& piece : pieces) {
            if (step.kind == StepKind::PrefixSpace) next.push_back(!piece.empty() && piece[0] == ' ' ? piece : " " + piece);
            else split_isolated(piece, step.pattern, next);
        }
        pieces.swap(next);
    }
    return pieces;
}

std::string ByteLevelPreTokenizer::describe() const {
    std::string out;
    for (Step step : steps_) {
        if (!out.empty()) out += " + ";
        out += step.kind == StepKind::PrefixSpace ? std::string("prefix space") : std::string(split_pattern_name(step.pattern)) + " split";
    }
    return out;
}

}  // namespace lorascope::tokenizer
