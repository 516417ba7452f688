// The filters, tests, globals and methods a chat template can call, by name: which jinja2 offers,
// which of those this engine implements (filters.cpp, tests.cpp, globals.cpp, methods.cpp), and the
// argument binding they share (Python's positional-then-keyword rules).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"

namespace lorascope::chat {

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
};

// Binds arguments to parameters by position, then by keyword; a parameter neither given nor
// defaulted is undefined. Too many arguments or an unknown keyword is a RenderError naming `what`.
struct Param {
    const char* name;
    std::optional<Value> fallback;  // nullopt: required
};
std::vector<Value> bind_args(const std::string& what, CallArgs& args, std::initializer_list<Param> params);

FilterFn find_filter(const std::string& name);  // nullptr when not implemented
FilterFn find_text_filter(const std::string& name);      // filters_text.cpp
FilterFn find_sequence_filter(const std::string& name);  // filters_seq.cpp
TestFn find_test(const std::string& name);
bool jinja_has_filter(const std::string& name);  // jinja2's default filters (for the refusal's wording)
bool jinja_has_test(const std::string& name);

}  // namespace lorascope::chat
