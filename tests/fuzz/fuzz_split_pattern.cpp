// The hand-written Split matchers (engine/src/tokenizer/split_patterns.h) against a reference that
// spells each pattern out as a backtracking regex engine would run it: at each position the
// alternatives in order, each quantifier greedy and giving back one character at a time. The
// reference is quadratic in the worst case, which inputs of fuzzing size afford; the matchers must
// agree with it piece for piece, and their pieces must rebuild the input.
// Input: byte 0 picks the pattern, the rest is the text (any bytes).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tokenizer/split_patterns.h"
#include "tokenizer/unicode.h"

using namespace lorascope::tokenizer;

namespace {

struct Text {
    std::vector<char32_t> cp;
    std::vector<size_t> offset;  // byte offset of each code point, plus the end
    explicit Text(const std::string& s) {
        size_t len;
        for (size_t pos = 0; pos < s.size(); pos += len) {
            cp.push_back(utf8_next(s, pos, &len));
            offset.push_back(pos);
        }
        offset.push_back(s.size());
    }
};

bool ws(char32_t c) { return is_whitespace(c); }
bool letter(char32_t c) { return is_letter(c); }
bool number(char32_t c) { return is_number(c); }
bool other(char32_t c) { return !ws(c) && !letter(c) && !number(c); }
bool line_break(char32_t c) { return c == U'\r' || c == U'\n'; }

// Greedy x{min,max} of class `is` at i: the lengths a backtracking engine tries, longest first.
std::vector<size_t> greedy(const Text& t, size_t i, bool (*is)(char32_t), size_t min, size_t max = SIZE_MAX) {
    size_t n = 0;
    while (i + n < t.cp.size() && n < max && is(t.cp[i + n])) ++n;
    std::vector<size_t> out;
    for (size_t k = n + 1; k-- > min;) out.push_back(k);
    return out;
}

char32_t fold(char32_t c) { return (c >= U'A' && c <= U'Z') ? c + 32 : c == U'\u017F' ? U's' : c; }

size_t contraction(const Text& t, size_t i, bool ignore_case) {
    static const char* const kSuffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    if (t.cp[i] != U'\'') return 0;
    for (const char* suffix : kSuffixes) {
        size_t k = 0;
        while (suffix[k] && i + 1 + k < t.cp.size() &&
               (ignore_case ? fold(t.cp[i + 1 + k]) : t.cp[i + 1 + k]) == static_cast<char32_t>(suffix[k]))
            ++k;
        if (!suffix[k]) return 1 + k;
    }
    return 0;
}

// (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
size_t reference_llama3(const Text& t, size_t i, size_t max_digits) {
    const size_t n = t.cp.size();
    if (size_t len = contraction(t, i, true)) return len;
    for (size_t opt : greedy(t, i, [](char32_t c) { return !line_break(c) && !letter(c) && !number(c); }, 0, 1))
        for (size_t body : greedy(t, i + opt, letter, 1)) return opt + body;
    for (size_t digits : greedy(t, i, number, 1, max_digits)) return digits;
    for (size_t opt : greedy(t, i, [](char32_t c) { return c == U' '; }, 0, 1))
        for (size_t body : greedy(t, i + opt, other, 1)) return opt + body + greedy(t, i + opt + body, line_break, 0).front();
    for (size_t spaces : greedy(t, i, ws, 0))
        for (size_t breaks : greedy(t, i + spaces, line_break, 1)) return spaces + breaks;
    for (size_t spaces : greedy(t, i, ws, 1))
        if (i + spaces == n || ws(t.cp[i + spaces])) return spaces;
    for (size_t spaces : greedy(t, i, ws, 1)) return spaces;
    return 0;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t reference_gpt2(const Text& t, size_t i) {
    const size_t n = t.cp.size();
    if (size_t len = contraction(t, i, false)) return len;
    for (bool (*cls)(char32_t) : {letter, number, other})
        for (size_t opt : greedy(t, i, [](char32_t c) { return c == U' '; }, 0, 1))
            for (size_t body : greedy(t, i + opt, cls, 1)) return opt + body;
    for (size_t spaces : greedy(t, i, ws, 1))
        if (i + spaces == n || ws(t.cp[i + spaces])) return spaces;
    for (size_t spaces : greedy(t, i, ws, 1)) return spaces;
    return 0;
}

std::vector<std::string> reference_split(const std::string& s, SplitPattern pattern) {
    const Text t(s);
    std::vector<std::string> out;
    size_t i = 0;
    while (i < t.cp.size()) {  // these patterns match at every position, so there are no gaps
        const size_t len = pattern == SplitPattern::Gpt2 ? reference_gpt2(t, i)
                                                         : reference_llama3(t, i, pattern == SplitPattern::Llama3 ? 3 : 1);
        if (len == 0) std::abort();
        out.push_back(s.substr(t.offset[i], t.offset[i + len] - t.offset[i]));
        i += len;
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    static const SplitPattern kPatterns[] = {SplitPattern::Llama3, SplitPattern::Qwen2, SplitPattern::Gpt2, SplitPattern::Bloom};
    const SplitPattern pattern = kPatterns[data[0] % 4];
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<std::string> pieces;
    split_isolated(text, pattern, pieces);
    std::string joined;
    for (const std::string& p : pieces) {
        if (p.empty()) std::abort();
        joined += p;
    }
    if (joined != text) {
        std::fprintf(stderr, "%s split does not rebuild its input\n", split_pattern_name(pattern));
        std::abort();
    }
    if (pattern == SplitPattern::Bloom) return 0;  // BLOOM's pattern has gaps; covered by the rebuild check
    const std::vector<std::string> expected = reference_split(text, pattern);
    if (pieces != expected) {
        std::fprintf(stderr, "%s split: %zu pieces, the reference %zu\n", split_pattern_name(pattern), pieces.size(), expected.size());
        for (size_t k = 0; k < pieces.size() || k < expected.size(); ++k)
            if (k >= pieces.size() || k >= expected.size() || pieces[k] != expected[k]) {
                std::fprintf(stderr, "  first difference at piece %zu\n", k);
                break;
            }
        std::abort();
    }
    return 0;
}
