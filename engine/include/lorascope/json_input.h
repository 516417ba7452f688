// JSON text from outside the process (request bodies, request lines, parameter objects, model and
// adapter files) as nlohmann::json, with its nesting depth and size bounded while it is parsed.
//
// Why while parsing: nlohmann's parser is iterative, but copying, dumping, comparing and (before
// 3.10) destroying a value recurse once per nesting level, so a parsed 500,000-deep array is a
// stack overflow waiting for its first copy (issue 26: `lorascope-cli serve` died with SIGSEGV on
// such a /generate body). A depth counted by the parser's callback refuses the input before any
// such value exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lorascope/error.h"

namespace lorascope {

struct JsonLimits {
    // Containers (objects and arrays) nested at most this deep; the top-level object counts as 1.
    // No Hugging Face config, tokenizer.json or request this project reads nests deeper than ~8.
    int max_depth = 64;
    // Bytes of text at most; 0: no limit (model files are bounded by what the user loads).
    size_t max_bytes = 0;
};

// Parses `text`. Malformed JSON, a NUL byte (nlohmann would stop there and take "{}\0junk" for
// "{}"), a number beyond double's range, nesting deeper than limits.max_depth and text longer than
// limits.max_bytes are Error(kind, source, message) saying which and where.
nlohmann::json parse_json_input(std::string_view text, const std::string& source, const JsonLimits& limits = {},
                                ErrorKind kind = ErrorKind::Format);

// At most `max_chars` characters of a value's JSON text, for error messages: a message quotes what
// it refuses without echoing a megabyte back to the client (the value is bounded in depth by the
// parser above, so dumping it is safe; its length is not).
std::string json_excerpt(const nlohmann::json& value, size_t max_chars = 80);

// An object key from outside the process, for error messages: a short key of printable ASCII
// as it is, any other (a newline, a control byte, a backtick, non-ASCII, over `max_chars`) as
// its bounded JSON string. Messages quote unknown keys; a raw one let a client put a newline
// into a one-line error (the HTTP fuzzer's finding) and echo a megabyte back.
std::string json_key_excerpt(std::string_view key, size_t max_chars = 64);

}  // namespace lorascope
