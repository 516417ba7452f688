// Python's operators on template values: arithmetic (int overflow refused, true division, floor
// division and modulo with Python's signs), repetition and concatenation of str/list/tuple,
// ordering comparisons and `in`. A type Python refuses is a RenderError with Python's wording; an
// undefined operand is jinja2's UndefinedError.
#pragma once

#include "chat/ast.h"
#include "chat/value.h"

namespace lorascope::chat {

class Evaluator;

Value binary_op(Evaluator& ev, ast::BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value positive(const Value& v);
// <, <=, >, >= (Equal/NotEqual/In/NotIn are handled by the callers).
bool ordered(Evaluator& ev, ast::CompareOp op, const Value& a, const Value& b);
bool contains(Evaluator& ev, const Value& container, const Value& item);  // item in container
// jinja2's UndefinedError for using an undefined value (its name says what was looked up).
[[noreturn]] void fail_undefined(const Value& undefined);

}  // namespace lorascope::chat
