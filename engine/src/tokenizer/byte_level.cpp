#include "tokenizer/byte_level.h"

#include "lorascope/error.h"
#include "tokenizer/unicode.h"

#include <nlohmann/json.hpp>

#include <unordered_map>

namespace lorascope::tokenizer {

namespace {

// The two split patterns are matched by hand rather than by a regex engine: std::regex has
// no \p{..} classes, and these patterns are short enough to follow alternative by alternative.
const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char* const kBloomPattern = " ?[^(\\s|[.,!?\xE2\x80\xA6\xE3\x80\x82\xEF\xBC\x8C\xE3\x80\x81\xE0\xA5\xA4\xDB\x94\xD8\x8C])]+";

struct Chars {
    std::vector<char32_t> cp;
    std::vector<size_t> offset;  // byte offset of each code point, plus the end
    explicit Chars(std::string_view text) {
        size_t pos = 0;
        while (pos < text.size()) {
            size_t len;
            cp.push_back(utf8_next(text, pos, &len));
            offset.push_back(pos);
            pos += len;
        }
        offset.push_back(text.size());
    }
    size_t size() const { return cp.size(); }
};

bool is_other(char32_t c) { return !is_whitespace(c) && !is_letter(c) && !is_number(c); }

// Length (in code points) of GPT-2's pattern matched at i; never zero for a non-empty rest.
size_t match_gpt2(const Chars& s, size_t i) {
    const size_t n = s.size();
    const char32_t c = s.cp[i];
    if (c == U'\'' && i + 1 < n) {
        const char32_t a = s.cp[i + 1];
        if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
        if (i + 2 < n) {
            const char32_t b = s.cp[i + 2];
            if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
        }
    }
    auto run = [&](size_t from, bool (*pred)(char32_t)) {
        size_t j = from;
        while (j < n && pred(s.cp[j])) ++j;
        return j - from;
    };
    for (bool (*cls)(char32_t) : {&is_letter, &is_number, &is_other}) {
        if (c == U' ' && i + 1 < n && cls(s.cp[i + 1])) return 1 + run(i + 1, cls);
        if (cls(c)) return run(i, cls);
    }
    // c is whitespace: \s+(?!\S) backs off one character when non-space follows, else \s+.
    const size_t len = run(i, &is_whitespace);
    if (i + len == n || len == 1) return len;
    return len - 1;
}

bool is_bloom_excluded(char32_t c) {
    switch (c) {
        case U'(': case U')': case U'|': case U'.': case U',': case U'!': case U'?':
        case U'\u2026': case U'\u3002': case U'\uFF0C': case U'\u3001': case U'\u0964':
        case U'\u06D4': case U'\u060C':
            return true;
        default:
            return is_whitespace(c);
    }
}

// Length of BLOOM's pattern matched at i, or 0 where it does not match.
size_t match_bloom(const Chars& s, size_t i) {
    const size_t n = s.size();
    size_t j = i;
    if (s.cp[j] == U' ' && j + 1 < n && !is_bloom_excluded(s.cp[j + 1])) ++j;
    const size_t body = j;
    while (j < n && !is_bloom_excluded(s.cp[j])) ++j;
    return j > body ? j - i : 0;
}

// Split with behaviour Isolated: matches and the runs between them each become a piece.
void split_isolated(std::string_view text, size_t (*match)(const Chars&, size_t), std::vector<std::string>& out) {
    const Chars s(text);
    size_t gap_start = 0, i = 0;
    while (i < s.size()) {
        const size_t len = match(s, i);
        if (len == 0) {
            ++i;
            continue;
        }
        if (gap_start < i) out.emplace_back(text.substr(s.offset[gap_start], s.offset[i] - s.offset[gap_start]));
        out.emplace_back(text.substr(s.offset[i], s.offset[i + len] - s.offset[i]));
        i += len;
        gap_start = i;
    }
    if (gap_start < s.size()) out.emplace_back(text.substr(s.offset[gap_start]));
}

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
    if (add_prefix_space) p.steps_.push_back(Step::PrefixSpace);
    p.steps_.push_back(Step::Gpt2Pattern);
    return p;
}

void ByteLevelPreTokenizer::add_json(const nlohmann::json& config, const std::string& path, bool* has_byte_level) {
    const std::string type = config.value("type", "");
    if (type == "Sequence") {
        for (const auto& step : config.at("pretokenizers")) add_json(step, path, has_byte_level);
    } else if (type == "ByteLevel") {
        *has_byte_level = true;
        if (config.value("add_prefix_space", false)) steps_.push_back(Step::PrefixSpace);
        if (config.value("use_regex", true)) steps_.push_back(Step::Gpt2Pattern);
    } else if (type == "Split") {
        const auto& pattern = config.at("pattern");
        const std::string regex = pattern.contains("Regex") ? pattern["Regex"].get<std::string>() : std::string();
        const std::string behavior = config.value("behavior", "");
        if (config.value("invert", false) || behavior != "Isolated" || (regex != kGpt2Pattern && regex != kBloomPattern)) {
            throw Error(ErrorKind::Unsupported, path,
                        "pre_tokenizer Split with pattern " + pattern.dump() + ", behavior " + behavior +
                        " is not supported (only GPT-2's and BLOOM's patterns, Isolated, not inverted)");
        }
        steps_.push_back(regex == kGpt2Pattern ? Step::Gpt2Pattern : Step::BloomPattern);
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
            switch (step) {
                case Step::PrefixSpace:
                    next.push_back(!piece.empty() && piece[0] == ' ' ? piece : " " + piece);
                    break;
                case Step::Gpt2Pattern: split_isolated(piece, &match_gpt2, next); break;
                case Step::BloomPattern: split_isolated(piece, &match_bloom, next); break;
            }
        }
        pieces.swap(next);
    }
    return pieces;
}

std::string ByteLevelPreTokenizer::describe() const {
    std::string out;
    for (Step step : steps_) {
        if (!out.empty()) out += " + ";
        out += step == Step::PrefixSpace ? "prefix space" : step == Step::Gpt2Pattern ? "GPT-2 split" : "BLOOM split";
    }
    return out;
}

}  // namespace lorascope::tokenizer
