// UTF-8 helpers and the Unicode character classes the pre-tokenizer patterns need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lorascope::tokenizer {

// Decodes the code point starting at text[pos] and stores its byte length in *len.
// Ill-formed bytes decode as U+FFFD with length 1 (inputs from std::string may be invalid).
char32_t utf8_next(std::string_view text, size_t pos, size_t* len);
void utf8_append(std::string& out, char32_t cp);

// Bytes to text the way Rust's String::from_utf8_lossy (and Python's errors="replace") does:
// each maximal ill-formed subpart becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// Length of the longest prefix of `bytes` that ends on a sequence boundary, such that the
// remaining tail is a valid but incomplete UTF-8 sequence that more bytes could complete.
size_t utf8_complete_prefix(std::string_view bytes);

bool is_letter(char32_t cp);      // \p{L}
bool is_number(char32_t cp);      // \p{N}
bool is_whitespace(char32_t cp);  // White_Space: Oniguruma's \s for UTF-8 and Rust's char::is_whitespace
const char* unicode_version();

// Raw table lookups for grapheme.cpp (values as in gen_unicode_tables.py; 0 = none).
int grapheme_break_class(char32_t cp);
bool is_extended_pictographic(char32_t cp);
int indic_conjunct_break_class(char32_t cp);

}  // namespace lorascope::tokenizer
