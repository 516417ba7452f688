// The recursive-descent parser behind parse_template (parser.h), shared by parser.cpp (statements)
// and parser_expr.cpp (expressions). Each parse_* function mirrors the jinja2 Parser method of the
// same name, so that precedence and the odd corners (tests taking one bare argument, tuples without
// parentheses, adjacent string literals joining) agree.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "lorascope/error.h"

namespace lorascope::chat {

class Parser {
public:
    Parser(const std::vector<Token>& tokens, const std::string& origin, int max_depth)
        : t_(tokens), origin_(origin), max_depth_(max_depth) {}

    ast::Body parse();

private:
    // ---- tokens ----
    const Token& cur() const { return t_[i_]; }
    const Token& look() const { return t_[i_ + 1 < t_.size() ? i_ + 1 : i_]; }
    void next() {
        if (i_ + 1 < t_.size()) ++i_;
    }
    bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().text == op; }
    bool is_name(const char* name) const { return cur().type == TokenType::Name && cur().text == name; }
    bool is_name_in(std::initializer_list<const char*> names) const;
    bool skip_op(const char* op);
    bool skip_name(const char* name);
    void expect_op(const char* op);
    void expect(TokenType type);
    std::string expect_name();
    std::string describe_current() const;
    [[noreturn]] void fail(ErrorKind kind, int line, const std::string& message) const;
    [[noreturn]] void fail_here(const std::string& message) const { fail(ErrorKind::Format, cur().line, message); }

    // ---- depth ----
    struct DepthGuard {
        DepthGuard(Parser& p, int line);
        ~DepthGuard() { --p.depth_; }
        Parser& p;
    };
    ast::ExprPtr node(ast::ExprKind kind, int line, std::vector<ast::ExprPtr> operands = {});
    // A node of one or two operands (unary and binary operators, calls).
    ast::ExprPtr operands(ast::ExprKind kind, int line, ast::ExprPtr first, ast::ExprPtr second = nullptr);
    int depth_of(const ast::Expr* e) const;

    // ---- statements (parser.cpp) ----
    ast::Body subparse(std::initializer_list<const char*> end_names);
    ast::Body parse_statements(std::initializer_list<const char*> end_names, bool drop_needle);
    void parse_statement(ast::Body& body);
    ast::StmtPtr stmt(ast::StmtKind kind, int line);
    ast::StmtPtr parse_for();
    ast::StmtPtr parse_if();
    ast::StmtPtr parse_set();
    ast::StmtPtr parse_macro();
    ast::StmtPtr parse_filter_block();
    ast::StmtPtr parse_with();
    ast::StmtPtr parse_loop_control(ast::StmtKind kind);
    void parse_print(ast::Body& body);
    std::vector<std::string> parse_targets(const char* extra_end, bool& tuple_target);

    // ---- expressions (parser_expr.cpp) ----
    ast::ExprPtr parse_tuple(bool with_condexpr = true, bool explicit_parentheses = false);
    ast::ExprPtr parse_expression(bool with_condexpr = true);
    ast::ExprPtr parse_condexpr();
    ast::ExprPtr parse_or();
    ast::ExprPtr parse_and();
    ast::ExprPtr parse_not();
    ast::ExprPtr parse_compare();
    ast::ExprPtr parse_math1();
    ast::ExprPtr parse_concat();
    ast::ExprPtr parse_math2();
    ast::ExprPtr parse_pow();
    ast::ExprPtr parse_unary(bool with_filter = true);
    ast::ExprPtr parse_primary();
    ast::ExprPtr parse_list();
    ast::ExprPtr parse_dict();
    ast::ExprPtr parse_postfix(ast::ExprPtr node);
    ast::ExprPtr parse_filter_expr(ast::ExprPtr node);
    ast::ExprPtr parse_call(ast::ExprPtr callee);
    ast::ExprPtr parse_subscript(ast::ExprPtr node);
    ast::ExprPtr parse_slice_part();
    void parse_call_args(ast::Expr& call);
    ast::ExprPtr parse_filter(ast::ExprPtr node, bool start_inline = false);
    ast::ExprPtr parse_test(ast::ExprPtr node);
    bool is_tuple_end(const char* extra_end = nullptr) const;

    const std::vector<Token>& t_;
    size_t i_ = 0;
    std::string origin_;
    int max_depth_;
    int depth_ = 0;       // statements and expressions being parsed, nested
    int loop_depth_ = 0;  // for loops around the current statement (break / continue), reset by macros
};

}  // namespace lorascope::chat
