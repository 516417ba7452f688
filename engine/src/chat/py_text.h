// Python str semantics over UTF-8 text, for the chat-template engine: templates index, slice,
// strip and split strings by code point with CPython's notion of whitespace, and print values the
// way str()/repr() do. Every string reaching here is valid UTF-8 (checked where it enters).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::chat {

// Offset of the first byte that is not well-formed UTF-8, or npos.
size_t invalid_utf8_at(std::string_view text);

bool py_isspace(char32_t cp);      // str.isspace(), and the regex \s of jinja2's lexer
bool py_isprintable(char32_t cp);  // str.isprintable(): what repr() leaves unescaped

// Code points: count, and the byte offset of each one (plus the end) for indexing and slicing.
int64_t code_point_count(std::string_view text);
std::vector<size_t> code_point_offsets(std::string_view text);
std::vector<char32_t> code_points(std::string_view text);

// str.strip / lstrip / rstrip; chars = nullopt strips whitespace.
std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left, bool right);
// str.split / rsplit; sep = nullopt splits on runs of whitespace. maxsplit < 0: no limit.
// An empty sep is the caller's error (Python's ValueError).
std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep, int64_t maxsplit);
// str.splitlines() (without keepends): every line boundary CPython knows.
std::vector<std::string> py_splitlines(std::string_view text);
// str.replace(old, new, count); count < 0: all. An empty `old` inserts between code points.
std::string py_replace(std::string_view text, std::string_view old, std::string_view replacement, int64_t count);
// str.find / rfind / count over code points (the result is a code-point index, -1 when absent).
int64_t py_find(std::string_view text, std::string_view sub, bool reverse);
int64_t py_count(std::string_view text, std::string_view sub);

// Case mapping of ASCII letters only: chat templates upper/lower role names and keywords. Text with
// other characters is refused by the callers (full Unicode case mapping is not implemented).
bool is_ascii(std::string_view text);
std::string ascii_upper(std::string_view text);
std::string ascii_lower(std::string_view text);
std::string ascii_title(std::string_view text);       // str.title()
std::string ascii_capitalize(std::string_view text);  // str.capitalize()
// str.islower() / isupper(): some cased letter and none of the other case.
bool ascii_islower(std::string_view text);
bool ascii_isupper(std::string_view text);

// repr() of a str: quotes chosen as CPython does, escapes for the backslash, the quote, \t \n \r,
// and every code point that is not printable.
std::string py_repr_string(std::string_view text);
// repr() of a float (the shortest text that reads back, in CPython's fixed/exponent choice).
std::string py_repr_float(double value);

}  // namespace lorascope::chat
