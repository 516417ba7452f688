// Values as text, exactly as Python writes them: str() for {{ }} output, `~` and the string
// filter; repr() inside containers; and json.dumps with the options of transformers' tojson filter
// (ensure_ascii, indent, separators, sort_keys). A value Python would print with a memory address
// (a function, a generator) is refused with a RenderError instead of printing something else.
#pragma once

#include <optional>
#include <string>

#include "chat/value.h"

namespace lorascope::chat {

// Objects print themselves; what they print must not depend on memory addresses.
class Printable {
public:
    virtual ~Printable() = default;
    virtual std::string repr() const = 0;
};

std::string py_str(const Value& value);   // undefined prints as ""
std::string py_repr(const Value& value);

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;     // nullopt: one line
    std::optional<std::string> item_separator, key_separator;  // nullopt: json.dumps' defaults
    bool sort_keys = false;
};
std::string py_json_dumps(const Value& value, const JsonOptions& options);

}  // namespace lorascope::chat
