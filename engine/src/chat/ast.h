// The syntax tree of a chat template, as jinja2's parser builds it for the subset we implement:
// expressions (literals, names, attribute/item access, slices, calls, filters, tests, operators,
// conditional expressions) and statements (output, if, for, set, macro, filter blocks, break,
// continue, with, generation). Built once by parser.cpp; read-only afterwards, so that one parsed
// template renders on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/value.h"

namespace lorascope::chat {

class Evaluator;
struct CallArgs;
// A filter or test implementation (filters.cpp, tests.cpp), resolved when the template is parsed.
using FilterFn = Value (*)(Evaluator& ev, const Value& subject, CallArgs& args);
using TestFn = bool (*)(Evaluator& ev, const Value& subject, CallArgs& args);

namespace ast {

enum class ExprKind {
    Literal, Name, List, Tuple, Dict, GetAttr, GetItem, Slice, Call, Filter, Test,
    Not, Negative, Positive, Binary, And, Or, Compare, Concat, Conditional,
};
enum class BinaryOp { Add, Subtract, Multiply, Divide, FloorDivide, Modulo, Power };
enum class CompareOp { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, In, NotIn };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
    std::string name;
    ExprPtr value;
};

// One node; which fields matter depends on kind:
//   Literal: literal.  Name: name.  List/Tuple: operands.  Dict: operands = k0, v0, k1, v1, ...
//   GetAttr: operands[0] . name.  GetItem: operands[0] [ operands[1] ].
//   Slice: operands[0] [ operands[1] : operands[2] : operands[3] ] (absent parts are null).
//   Call: operands[0] ( operands[1..], keywords ).
//   Filter: operands[0] | name ( operands[1..], keywords ); operands[0] is null in a filter block.
//   Test: operands[0] is name ( operands[1..], keywords ).
//   Not/Negative/Positive: operands[0].  Binary: operands[0] op operands[1].  And/Or: the two operands.
//   Compare: operands[0] compare_ops[0] operands[1] compare_ops[1] operands[2] ...
//   Concat: operands[0] ~ operands[1] ~ ...  Conditional: operands[1] if operands[0] else operands[2] (null).
struct Expr {
    ExprKind kind = ExprKind::Literal;
    int line = 0;
    int depth = 1;  // of the subtree, for the parser's nesting limit
    std::string name;
    Value literal;
    BinaryOp binary_op = BinaryOp::Add;
    std::vector<CompareOp> compare_ops;
    std::vector<ExprPtr> operands;
    std::vector<Keyword> keywords;
    FilterFn filter = nullptr;
    TestFn test = nullptr;
};

enum class StmtKind { Text, Output, If, For, Set, SetAttribute, SetBlock, Macro, FilterBlock, Break, Continue, With, Generation };

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Text: text.  Output: exprs[0].
// If: exprs = the conditions, bodies = one per condition, plus the else body.
// For: targets (tuple_target when written with commas) in exprs[0], filtered by exprs[1] (may be
//   null); bodies[0] the loop, bodies[1] the else.
// Set: targets (tuple_target) = exprs[0].  SetAttribute: name.attribute = exprs[0].
// SetBlock: targets[0] = the output of bodies[0], through the filter chain exprs[0] (may be null).
// Macro: name(targets, the last exprs.size() of them with defaults exprs) = bodies[0].
// FilterBlock: bodies[0] through the filter chain exprs[0].
// With: targets = exprs, then bodies[0].  Generation: bodies[0].
struct Stmt {
    StmtKind kind = StmtKind::Text;
    int line = 0;
    std::string text;
    std::string name, attribute;
    std::vector<std::string> targets;
    bool tuple_target = false;
    std::vector<ExprPtr> exprs;
    std::vector<Body> bodies;
};

}  // namespace ast
}  // namespace lorascope::chat
