#include "tokenizer/split_patterns.h"

#include "tokenizer/unicode.h"

#include <array>

namespace lorascope::tokenizer {

namespace {

struct PatternSpelling {
    SplitPattern pattern;
    const char* name;
    std::string regex;
};

const std::array<PatternSpelling, 4>& spellings() {
    static const std::array<PatternSpelling, 4> table = {{
        {SplitPattern::Gpt2, "GPT-2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
        {SplitPattern::Bloom, "BLOOM",
         " ?[^(\\s|[.,!?\xE2\x80\xA6\xE3\x80\x82\xEF\xBC\x8C\xE3\x80\x81\xE0\xA5\xA4\xDB\x94\xD8\x8C])]+"},
        {SplitPattern::Llama3, "Llama 3",
         "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
        {SplitPattern::Qwen2, "Qwen2",
         "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
         "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    }};
    return table;
}

// The text as code points, with the byte offset of each (plus the end).
struct Chars {
    std::vector<char32_t> cp;
    std::vector<size_t> offset;
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
    // Length of the run of characters in class `pred` starting at `from`, up to `limit` (a matcher
    // that consumes less than it scans must cap the scan, or a long run costs quadratic time).
    size_t run(size_t from, bool (*pred)(char32_t), size_t limit = static_cast<size_t>(-1)) const {
        size_t j = from;
        while (j < cp.size() && j - from < limit && pred(cp[j])) ++j;
        return j - from;
    }
};

bool is_other(char32_t c) { return !is_whitespace(c) && !is_letter(c) && !is_number(c); }
bool is_line_break(char32_t c) { return c == U'\r' || c == U'\n'; }

// The length of a contraction at i ('s 't 're 've 'm 'll 'd), 0 if none. With ignore_case, as
// Oniguruma folds case: ASCII letters either way, and U+017F (long s) matches s.
size_t match_contraction(const Chars& s, size_t i, bool ignore_case) {
    const size_t n = s.size();
    if (s.cp[i] != U'\'' || i + 1 >= n) return 0;
    auto fold = [ignore_case](char32_t c) -> char32_t {
        if (!ignore_case) return c;
        if (c >= U'A' && c <= U'Z') return c - U'A' + U'a';
        return c == U'\u017F' ? U's' : c;
    };
    const char32_t a = fold(s.cp[i + 1]);
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (i + 2 >= n) return 0;
    const char32_t b = fold(s.cp[i + 2]);
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    return 0;
}

// Length (in code points) of GPT-2's pattern matched at i; never zero.
size_t match_gpt2(const Chars& s, size_t i) {
    if (size_t len = match_contraction(s, i, false)) return len;
    const size_t n = s.size();
    const char32_t c = s.cp[i];
    for (bool (*cls)(char32_t) : {&is_letter, &is_number, &is_other}) {
        if (c == U' ' && i + 1 < n && cls(s.cp[i + 1])) return 1 + s.run(i + 1, cls);
        if (cls(c)) return s.run(i, cls);
    }
    // c is whitespace: \s+(?!\S) backs off one character when non-space follows, else \s+.
    const size_t len = s.run(i, &is_whitespace);
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

// Llama 3's pattern (max_digits 3) and Qwen2's (max_digits 1) at i, alternative by alternative;
// never zero, since every character starts some alternative.
size_t match_llama3_family(const Chars& s, size_t i, size_t max_digits) {
    if (size_t len = match_contraction(s, i, true)) return len;
    const size_t n = s.size();
    const char32_t c = s.cp[i];
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (is_letter(c)) return s.run(i, &is_letter);
    if (!is_line_break(c) && !is_number(c) && i + 1 < n && is_letter(s.cp[i + 1])) return 1 + s.run(i + 1, &is_letter);
    // \p{N}{1,3} or \p{N}
    if (is_number(c)) return s.run(i, &is_number, max_digits);
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const size_t body = (c == U' ' && i + 1 < n && is_other(s.cp[i + 1])) ? i + 1 : i;
    if (is_other(s.cp[body])) {
        const size_t end = body + s.run(body, &is_other);
        return end + s.run(end, &is_line_break) - i;
    }
    // c is whitespace. \s*[\r\n]+: \s* backs off to the last line break of the run, which [\r\n]+
    // then takes alone (a line break right after it would have been later in the run).
    const size_t len = s.run(i, &is_whitespace);
    for (size_t k = len; k > 0; --k)
        if (is_line_break(s.cp[i + k - 1])) return k;
    // \s+(?!\S), then \s+.
    if (i + len == n || len == 1) return len;
    return len - 1;
}

size_t match_at(SplitPattern pattern, const Chars& s, size_t i) {
    switch (pattern) {
        case SplitPattern::Gpt2: return match_gpt2(s, i);
        case SplitPattern::Bloom: return match_bloom(s, i);
        case SplitPattern::Llama3: return match_llama3_family(s, i, 3);
        case SplitPattern::Qwen2: return match_llama3_family(s, i, 1);
    }
    return 0;
}

}  // namespace

std::optional<SplitPattern> split_pattern_from_regex(const std::string& regex) {
    for (const PatternSpelling& p : spellings())
        if (p.regex == regex) return p.pattern;
    return std::nullopt;
}

const std::string& split_pattern_regex(SplitPattern pattern) {
    for (const PatternSpelling& p : spellings())
        if (p.pattern == pattern) return p.regex;
    return spellings()[0].regex;
}

const char* split_pattern_name(SplitPattern pattern) {
    for (const PatternSpelling& p : spellings())
        if (p.pattern == pattern) return p.name;
    return "unknown";
}

void split_isolated(std::string_view text, SplitPattern pattern, std::vector<std::string>& out) {
    const Chars s(text);
    size_t gap_start = 0, i = 0;
    while (i < s.size()) {
        const size_t len = match_at(pattern, s, i);
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

}  // namespace lorascope::tokenizer
