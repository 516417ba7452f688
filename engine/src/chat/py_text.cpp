#include "chat/py_text.h"

#include "tokenizer/unicode.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace lorascope::chat {

namespace {

struct CodepointRange {
    char32_t first, last;
};
#include "chat/py_text_tables.inc"

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], char32_t cp) {
    const auto* end = table + N;
    const auto* it = std::upper_bound(table, end, cp, [](char32_t c, const CodepointRange& r) { return c < r.first; });
    return it != table && cp <= (it - 1)->last;
}

char32_t next_cp(std::string_view text, size_t pos, size_t* len) { return tokenizer::utf8_next(text, pos, len); }

bool in_set(const std::vector<char32_t>& set, char32_t cp) {
    return std::find(set.begin(), set.end(), cp) != set.end();
}

// The byte offset just past the leading code points that `strip_this` accepts.
template <class Pred>
size_t skip_left(std::string_view text, Pred strip_this) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        if (!strip_this(next_cp(text, pos, &len))) break;
        pos += len;
    }
    return pos;
}

// The byte offset of the end once trailing accepted code points are dropped (never below `floor`).
template <class Pred>
size_t skip_right(std::string_view text, size_t floor, Pred strip_this) {
    size_t end = text.size();
    while (end > floor) {
        size_t start = end - 1;
        while (start > floor && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
        size_t len = 0;
        if (!strip_this(next_cp(text, start, &len))) break;
        end = start;
    }
    return end;
}

}  // namespace

size_t invalid_utf8_at(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[pos]);
        if (c < 0x80) {
            ++pos;
            continue;
        }
        size_t len = 0;
        const char32_t cp = next_cp(text, pos, &len);
        // utf8_next decodes ill-formed bytes as U+FFFD of length 1; a real U+FFFD is 3 bytes long.
        if (cp == 0xFFFD && len == 1) return pos;
        pos += len;
    }
    return std::string_view::npos;
}

bool py_isspace(char32_t cp) { return in_ranges(kPySpace, cp); }
bool py_isprintable(char32_t cp) { return !in_ranges(kPyNotPrintable, cp); }

int64_t code_point_count(std::string_view text) {
    int64_t n = 0;
    for (char c : text)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

std::vector<size_t> code_point_offsets(std::string_view text) {
    std::vector<size_t> offsets;
    offsets.reserve(text.size() + 1);
    for (size_t i = 0; i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) offsets.push_back(i);
    offsets.push_back(text.size());
    return offsets;
}

std::vector<char32_t> code_points(std::string_view text) {
    std::vector<char32_t> out;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        out.push_back(next_cp(text, pos, &len));
        pos += len;
    }
    return out;
}

std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right) {
    std::vector<char32_t> set;
    if (chars) set = code_points(*chars);
    auto strip_this = [&](char32_t cp) { return chars ? in_set(set, cp) : py_isspace(cp); };
    const size_t begin = left ? skip_left(text, strip_this) : 0;
    const size_t end = right ? skip_right(text, begin, strip_this) : text.size();
    return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> parts;
    if (sep) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
            const size_t at = text.find(*sep, pos);
            if (at == std::string_view::npos) break;
            parts.emplace_back(text.substr(pos, at - pos));
            pos = at + sep->size();
        }
        parts.emplace_back(text.substr(pos));
        return parts;
    }
    size_t pos = 0;
    while (true) {
        pos += skip_left(text.substr(pos), py_isspace);
        if (pos >= text.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
            parts.emplace_back(text.substr(pos));
            break;
        }
        size_t end = pos;
        while (end < text.size()) {
            size_t len = 0;
            if (py_isspace(next_cp(text, end, &len))) break;
            end += len;
        }
        parts.emplace_back(text.substr(pos, end - pos));
        pos = end;
    }
    return parts;
}

std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> parts;  // collected right to left
    if (sep) {
        size_t end = text.size();
        while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
            if (end < sep->size()) break;
            const size_t at = text.rfind(*sep, end - sep->size());
            if (at == std::string_view::npos) break;
            parts.emplace_back(text.substr(at + sep->size(), end - at - sep->size()));
            end = at;
        }
        parts.emplace_back(text.substr(0, end));
    } else {
        size_t end = text.size();
        while (true) {
            end = skip_right(text.substr(0, end), 0, py_isspace);
            if (end == 0) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
                parts.emplace_back(text.substr(0, end));
                break;
            }
            size_t start = end;
            while (start > 0) {
                size_t s = start - 1;
                while (s > 0 && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
                size_t len = 0;
                if (py_isspace(next_cp(text, s, &len))) break;
                start = s;
            }
            parts.emplace_back(text.substr(start, end - start));
            end = start;
        }
    }
    std::reverse(parts.begin(), parts.end());
    return parts;
}

std::vector<std::string> py_splitlines(std::string_view text) {
    std::vector<std::string> lines;
    size_t start = 0, pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        const char32_t cp = next_cp(text, pos, &len);
        const bool boundary = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
                              cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!boundary) {
            pos += len;
            continue;
        }
        lines.emplace_back(text.substr(start, pos - start));
        pos += len;
        if (cp == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
        start = pos;
    }
    if (start < text.size()) lines.emplace_back(text.substr(start));
    return lines;
}

std::string py_replace(std::string_view text, std::string_view old, std::string_view replacement, int64_t count) {
    std::string out;
    int64_t done = 0;
    if (old.empty()) {
        // Python inserts the replacement before every code point and at the end.
        const auto offsets = code_point_offsets(text);
        for (size_t i = 0; i + 1 < offsets.size(); ++i) {
            if (count < 0 || done < count) {
                out += replacement;
                ++done;
            }
            out += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
        }
        if (count < 0 || done < count) out += replacement;
        return out;
    }
    size_t pos = 0;
    while (count < 0 || done < count) {
        const size_t at = text.find(old, pos);
        if (at == std::string_view::npos) break;
        out += text.substr(pos, at - pos);
        out += replacement;
        pos = at + old.size();
        ++done;
    }
    out += text.substr(pos);
    return out;
}

int64_t py_find(std::string_view text, std::string_view sub, bool reverse) {
    const size_t at = reverse ? text.rfind(sub) : text.find(sub);
    if (at == std::string_view::npos) return -1;
    return code_point_count(text.substr(0, at));
}

int64_t py_count(std::string_view text, std::string_view sub) {
    if (sub.empty()) return code_point_count(text) + 1;
    int64_t n = 0;
    for (size_t at = text.find(sub); at != std::string_view::npos; at = text.find(sub, at + sub.size())) ++n;
    return n;
}

bool is_ascii(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

namespace {
char up(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; }
char down(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
bool letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
}  // namespace

std::string ascii_upper(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = up(c);
    return out;
}

std::string ascii_lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = down(c);
    return out;
}

std::string ascii_title(std::string_view text) {
    std::string out(text);
    bool previous_cased = false;
    for (char& c : out) {
        if (letter(c)) {
            c = previous_cased ? down(c) : up(c);
            previous_cased = true;
        } else {
            previous_cased = false;
        }
    }
    return out;
}

std::string ascii_capitalize(std::string_view text) {
    std::string out = ascii_lower(text);
    if (!out.empty()) out[0] = up(out[0]);
    return out;
}

namespace {
// Some letter of case `want` and none of the other.
bool all_cased(std::string_view text, bool want_lower) {
    bool cased = false;
    for (char c : text) {
        if (!letter(c)) continue;
        if ((c >= 'a') != want_lower) return false;
        cased = true;
    }
    return cased;
}
}  // namespace

bool ascii_islower(std::string_view text) { return all_cased(text, true); }
bool ascii_isupper(std::string_view text) { return all_cased(text, false); }

std::string py_repr_string(std::string_view text) {
    const bool has_single = text.find('\'') != std::string_view::npos;
    const bool has_double = text.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    size_t pos = 0;
    char buf[16];
    while (pos < text.size()) {
        size_t len = 0;
        const char32_t cp = next_cp(text, pos, &len);
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && !py_isprintable(cp))) {
            const char* format = cp <= 0xFF ? "\\x%02x" : cp <= 0xFFFF ? "\\u%04x" : "\\U%08x";
            std::snprintf(buf, sizeof buf, format, static_cast<unsigned>(cp));
            out += buf;
        } else {
            out.append(text.substr(pos, len));
        }
        pos += len;
    }
    out += quote;
    return out;
}

std::string py_repr_float(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    // The shortest digits that read back, as d.ddde[+-]x; CPython's repr prints them in fixed
    // notation when the decimal point falls within 16 digits (-4 < decpt <= 16), else exponent.
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
    std::string sci(buf, result.ptr);
    std::string sign;
    if (sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::atoi(sci.c_str() + e + 1);
    const int decpt = exponent + 1;
    const int n = static_cast<int>(digits.size());
    if (decpt <= -4 || decpt > 16) {
        std::string out = sign + digits.substr(0, 1);
        if (n > 1) out += "." + digits.substr(1);
        std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        return out + buf;
    }
    if (decpt <= 0) return sign + "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    if (decpt < n) return sign + digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    return sign + digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
}

}  // namespace lorascope::chat
