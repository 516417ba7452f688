// Tokens to a syntax tree (ast.h) with jinja2's grammar and precedence: conditional expressions,
// or, and, not, comparisons (chained, `in`, `not in`), + -, ~, * / // %, ** (left-associative, as in
// jinja2), unary - +, then postfix access, calls, filters and tests. Filters and tests are resolved
// here, so a template naming one we lack fails to load. Nesting deeper than max_depth (statements
// and expressions together) is refused, so that neither this parser nor the evaluator can exhaust
// the stack.
#pragma once

#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace lorascope::chat {

// Throws lorascope::Error (Format for syntax errors, Unsupported for constructs left out, Unsafe
// for nesting beyond max_depth) naming origin and line.
ast::Body parse_template(const std::vector<Token>& tokens, const std::string& origin, int max_depth);

}  // namespace lorascope::chat
