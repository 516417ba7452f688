#include "tokenizer/unicode.h"

#include <algorithm>

namespace lorascope::tokenizer {

namespace {

struct CodepointRange {
    char32_t first, last;
};
struct CodepointClass {
    char32_t first, last;
    int value;
};
#include "tokenizer/unicode_tables.inc"

template <size_t N>
int class_of(const CodepointClass (&table)[N], char32_t cp) {
    const CodepointClass* end = table + N;
    const CodepointClass* it = std::upper_bound(table, end, cp,
        [](char32_t value, const CodepointClass& r) { return value < r.first; });
    return (it != table && cp <= (it - 1)->last) ? (it - 1)->value : 0;
}

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], char32_t cp) {
    const CodepointRange* end = table + N;
    const CodepointRange* it = std::upper_bound(table, end, cp,
        [](char32_t value, const CodepointRange& r) { return value < r.first; });
    return it != table && cp <= (it - 1)->last;
}

// Length of a well-formed sequence starting at text[pos], or 0 if ill-formed; with `allow_truncated`
// a valid-so-far sequence cut by the end of text returns its (short) length negated.
int sequence_length(std::string_view text, size_t pos, bool* truncated) {
    *truncated = false;
    const unsigned char b0 = static_cast<unsigned char>(text[pos]);
    if (b0 < 0x80) return 1;
    int need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
    else if (b0 == 0xE0) { need = 2; lo = 0xA0; }
    else if (b0 >= 0xE1 && b0 <= 0xEC) need = 2;
    else if (b0 == 0xED) { need = 2; hi = 0x9F; }
    else if (b0 >= 0xEE && b0 <= 0xEF) need = 2;
    else if (b0 == 0xF0) { need = 3; lo = 0x90; }
    else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
    else if (b0 == 0xF4) { need = 3; hi = 0x8F; }
    else return 0;
    // Only the first continuation byte has a restricted range (Unicode Table 3-7).
    for (int i = 1; i <= need; ++i) {
        if (pos + i >= text.size()) {
            *truncated = true;
            return i;  // bytes that were valid so far
        }
        const unsigned char b = static_cast<unsigned char>(text[pos + i]);
        const unsigned char l = (i == 1) ? lo : 0x80, h = (i == 1) ? hi : 0xBF;
        if (b < l || b > h) return -i;  // maximal subpart of length i is ill-formed
    }
    return need + 1;
}

}  // namespace

char32_t utf8_next(std::string_view text, size_t pos, size_t* len) {
    bool truncated;
    const int n = sequence_length(text, pos, &truncated);
    if (n <= 0 || truncated) {
        *len = 1;
        return 0xFFFD;
    }
    *len = static_cast<size_t>(n);
    const unsigned char b0 = static_cast<unsigned char>(text[pos]);
    if (n == 1) return b0;
    char32_t cp = b0 & (0x7F >> n);
    for (int i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    return cp;
}

void utf8_append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string utf8_lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        bool truncated;
        const int n = sequence_length(bytes, pos, &truncated);
        if (n > 0 && !truncated) {
            out.append(bytes.data() + pos, static_cast<size_t>(n));
            pos += static_cast<size_t>(n);
        } else {
            utf8_append(out, 0xFFFD);
            // A lead byte that is not a lead byte at all is one subpart; otherwise the valid prefix is.
            pos += (n == 0) ? 1 : static_cast<size_t>(n < 0 ? -n : n);
        }
    }
    return out;
}

size_t utf8_complete_prefix(std::string_view bytes) {
    size_t pos = 0;
    while (pos < bytes.size()) {
        bool truncated;
        const int n = sequence_length(bytes, pos, &truncated);
        if (truncated) return pos;
        pos += (n == 0) ? 1 : static_cast<size_t>(n < 0 ? -n : n);
    }
    return pos;
}

bool is_letter(char32_t cp) { return in_ranges(kLetterRanges, cp); }
int grapheme_break_class(char32_t cp) { return class_of(kGraphemeBreak, cp); }
bool is_extended_pictographic(char32_t cp) { return in_ranges(kExtendedPictographic, cp); }
int indic_conjunct_break_class(char32_t cp) { return class_of(kIndicConjunctBreak, cp); }
bool is_number(char32_t cp) { return in_ranges(kNumberRanges, cp); }

bool is_whitespace(char32_t cp) {
    // The White_Space property (PropList.txt); unchanged since Unicode 6.3.
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

const char* unicode_version() { return LORASCOPE_UNICODE_VERSION; }

}  // namespace lorascope::tokenizer
