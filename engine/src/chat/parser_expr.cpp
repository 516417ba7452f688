// Expressions: parse_* of parser_impl.h, each mirroring jinja2's Parser method of that name.
#include "chat/builtins.h"
#include "chat/parser_impl.h"

namespace lorascope::chat {

using ast::ExprKind;
using ast::ExprPtr;

bool Parser::is_tuple_end(const char* extra_end) const {
    const TokenType type = cur().type;
    if (type == TokenType::VariableEnd || type == TokenType::BlockEnd || is_op(")")) return true;
    return extra_end && is_name(extra_end);
}

ExprPtr Parser::parse_tuple(bool with_condexpr, bool explicit_parentheses) {
    const int line = cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
        if (!items.empty()) expect_op(",");
        if (is_tuple_end()) break;
        items.push_back(parse_expression(with_condexpr));
        if (!is_op(",")) break;
        is_tuple = true;
    }
    if (!is_tuple) {
        if (!items.empty()) return std::move(items[0]);
        if (!explicit_parentheses) fail_here("expected an expression, got " + describe_current());
    }
    return node(ExprKind::Tuple, line, std::move(items));
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
    DepthGuard guard(*this, cur().line);
    return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
    int line = cur().line;
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
        std::vector<ExprPtr> parts;
        parts.push_back(parse_or());
        parts.push_back(std::move(expr));
        parts.push_back(skip_name("else") ? parse_condexpr() : nullptr);
        expr = node(ExprKind::Conditional, line, std::move(parts));
        line = cur().line;
    }
    return expr;
}

ExprPtr Parser::operands(ExprKind kind, int line, ExprPtr first, ExprPtr second) {
    std::vector<ExprPtr> parts;
    parts.push_back(std::move(first));
    if (second) parts.push_back(std::move(second));
    return node(kind, line, std::move(parts));
}

ExprPtr Parser::parse_or() {
    const int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) left = operands(ExprKind::Or, line, std::move(left), parse_and());
    return left;
}

ExprPtr Parser::parse_and() {
    const int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) left = operands(ExprKind::And, line, std::move(left), parse_not());
    return left;
}

ExprPtr Parser::parse_not() {
    if (is_name("not")) {
        const int line = cur().line;
        next();
        DepthGuard guard(*this, line);
        return operands(ExprKind::Not, line, parse_not());
    }
    return parse_compare();
}

ExprPtr Parser::parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    std::vector<ExprPtr> operands;
    std::vector<ast::CompareOp> ops;
    static const std::pair<const char*, ast::CompareOp> kOps[] = {
        {"==", ast::CompareOp::Equal}, {"!=", ast::CompareOp::NotEqual}, {"<", ast::CompareOp::Less},
        {"<=", ast::CompareOp::LessEqual}, {">", ast::CompareOp::Greater}, {">=", ast::CompareOp::GreaterEqual}};
    while (true) {
        bool matched = false;
        for (const auto& [text, op] : kOps) {
            if (skip_op(text)) {
                ops.push_back(op);
                matched = true;
                break;
            }
        }
        if (!matched) {
            if (skip_name("in")) {
                ops.push_back(ast::CompareOp::In);
            } else if (is_name("not") && look().type == TokenType::Name && look().text == "in") {
                next();
                next();
                ops.push_back(ast::CompareOp::NotIn);
            } else {
                break;
            }
        }
        operands.push_back(parse_math1());
    }
    if (ops.empty()) return first;
    operands.insert(operands.begin(), std::move(first));
    ExprPtr e = node(ExprKind::Compare, line, std::move(operands));
    e->compare_ops = std::move(ops);
    return e;
}

ExprPtr Parser::parse_math1() {
    const int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
        const auto op = is_op("+") ? ast::BinaryOp::Add : ast::BinaryOp::Subtract;
        next();
        left = operands(ExprKind::Binary, line, std::move(left), parse_concat());
        left->binary_op = op;
    }
    return left;
}

ExprPtr Parser::parse_concat() {
    const int line = cur().line;
    std::vector<ExprPtr> parts;
    parts.push_back(parse_math2());
    while (skip_op("~")) parts.push_back(parse_math2());
    if (parts.size() == 1) return std::move(parts[0]);
    return node(ExprKind::Concat, line, std::move(parts));
}

ExprPtr Parser::parse_math2() {
    const int line = cur().line;
    ExprPtr left = parse_pow();
    static const std::pair<const char*, ast::BinaryOp> kOps[] = {
        {"*", ast::BinaryOp::Multiply}, {"/", ast::BinaryOp::Divide}, {"//", ast::BinaryOp::FloorDivide},
        {"%", ast::BinaryOp::Modulo}};
    while (true) {
        const std::pair<const char*, ast::BinaryOp>* found = nullptr;
        for (const auto& entry : kOps)
            if (is_op(entry.first)) found = &entry;
        if (!found) return left;
        next();
        left = operands(ExprKind::Binary, line, std::move(left), parse_pow());
        left->binary_op = found->second;
    }
}

ExprPtr Parser::parse_pow() {
    const int line = cur().line;
    ExprPtr left = parse_unary();
    while (skip_op("**")) {
        left = operands(ExprKind::Binary, line, std::move(left), parse_unary());
        left->binary_op = ast::BinaryOp::Power;
    }
    return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
    const int line = cur().line;
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
        const ExprKind kind = is_op("-") ? ExprKind::Negative : ExprKind::Positive;
        next();
        DepthGuard guard(*this, line);
        e = operands(kind, line, parse_unary(false));
    } else {
        e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
}

ExprPtr Parser::parse_primary() {
    const Token& t = cur();
    const int line = t.line;
    if (t.type == TokenType::Name) {
        ExprPtr e = node(ExprKind::Literal, line);
        if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->literal = Value::none();
        else {
            e->kind = ExprKind::Name;
            e->name = t.text;
        }
        next();
        return e;
    }
    if (t.type == TokenType::String) {
        std::string text;
        while (cur().type == TokenType::String) {  // adjacent literals join, as in Python
            text += cur().text;
            next();
        }
        ExprPtr e = node(ExprKind::Literal, line);
        e->literal = Value::string(std::move(text));
        return e;
    }
    if (t.type == TokenType::Integer || t.type == TokenType::Float) {
        ExprPtr e = node(ExprKind::Literal, line);
        e->literal = t.type == TokenType::Integer ? Value::integer(t.integer) : Value::number(t.real);
        next();
        return e;
    }
    if (is_op("(")) {
        next();
        ExprPtr e = parse_tuple(true, true);
        expect_op(")");
        return e;
    }
    if (is_op("[")) return parse_list();
    if (is_op("{")) return parse_dict();
    fail_here("unexpected " + describe_current());
}

ExprPtr Parser::parse_list() {
    const int line = cur().line;
    expect_op("[");
    std::vector<ExprPtr> items;
    while (!is_op("]")) {
        if (!items.empty()) expect_op(",");
        if (is_op("]")) break;
        items.push_back(parse_expression());
    }
    expect_op("]");
    return node(ExprKind::List, line, std::move(items));
}

ExprPtr Parser::parse_dict() {
    const int line = cur().line;
    expect_op("{");
    std::vector<ExprPtr> items;
    while (!is_op("}")) {
        if (!items.empty()) expect_op(",");
        if (is_op("}")) break;
        items.push_back(parse_expression());
        expect_op(":");
        items.push_back(parse_expression());
    }
    expect_op("}");
    return node(ExprKind::Dict, line, std::move(items));
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
    while (true) {
        if (is_op(".") || is_op("[")) {
            e = parse_subscript(std::move(e));
        } else if (is_op("(")) {
            e = parse_call(std::move(e));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_filter_expr(ExprPtr e) {
    while (true) {
        if (is_op("|")) {
            e = parse_filter(std::move(e));
        } else if (is_name("is")) {
            e = parse_test(std::move(e));
        } else if (is_op("(")) {
            e = parse_call(std::move(e));
        } else {
            return e;
        }
    }
}

ExprPtr Parser::parse_call(ExprPtr callee) {
    ExprPtr call = operands(ExprKind::Call, cur().line, std::move(callee));
    parse_call_args(*call);
    return call;
}

ExprPtr Parser::parse_subscript(ExprPtr e) {
    const int line = cur().line;
    std::vector<ExprPtr> parts;
    parts.push_back(std::move(e));
    if (skip_op(".")) {
        if (cur().type == TokenType::Name) {
            ExprPtr g = node(ExprKind::GetAttr, line, std::move(parts));
            g->name = expect_name();
            return g;
        }
        if (cur().type != TokenType::Integer) fail_here("expected a name or a number after '.'");
        ExprPtr index = node(ExprKind::Literal, cur().line);
        index->literal = Value::integer(cur().integer);
        next();
        parts.push_back(std::move(index));
        return node(ExprKind::GetItem, line, std::move(parts));
    }
    expect_op("[");
    if (is_op("]")) fail_here("expected a subscript");
    // A slice: start? ':' stop? (':' step?)?
    ExprPtr start = is_op(":") ? nullptr : parse_expression();
    if (!is_op(":")) {
        if (is_op(",")) fail(ErrorKind::Unsupported, cur().line, "subscripts with commas (tuples) are not supported");
        expect_op("]");
        parts.push_back(std::move(start));
        return node(ExprKind::GetItem, line, std::move(parts));
    }
    next();
    parts.push_back(std::move(start));
    parts.push_back(parse_slice_part());
    parts.push_back(skip_op(":") ? parse_slice_part() : nullptr);
    if (is_op(",")) fail(ErrorKind::Unsupported, cur().line, "subscripts with commas (tuples) are not supported");
    expect_op("]");
    return node(ExprKind::Slice, line, std::move(parts));
}

ExprPtr Parser::parse_slice_part() {
    if (is_op(":") || is_op("]") || is_op(",")) return nullptr;
    return parse_expression();
}

void Parser::parse_call_args(ast::Expr& call) {
    const int line = cur().line;
    expect_op("(");
    bool need_comma = false;
    while (!is_op(")")) {
        if (need_comma) {
            expect_op(",");
            if (is_op(")")) break;
        }
        if (is_op("*") || is_op("**"))
            fail(ErrorKind::Unsupported, cur().line, "*args and **kwargs in calls are not supported");
        if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().text == "=") {
            ast::Keyword kw;
            kw.name = expect_name();
            next();
            kw.value = parse_expression();
            call.depth = std::max(call.depth, kw.value->depth + 1);
            call.keywords.push_back(std::move(kw));
        } else {
            if (!call.keywords.empty()) fail(ErrorKind::Format, line, "invalid syntax for function call expression");
            call.operands.push_back(parse_expression());
            call.depth = std::max(call.depth, call.operands.back()->depth + 1);
        }
        need_comma = true;
    }
    expect_op(")");
}

ExprPtr Parser::parse_filter(ExprPtr subject, bool start_inline) {
    while (is_op("|") || start_inline) {
        if (!start_inline) next();
        start_inline = false;
        const int line = cur().line;
        std::string name = expect_name();
        while (skip_op(".")) name += "." + expect_name();
        std::vector<ExprPtr> parts;
        parts.push_back(std::move(subject));
        ExprPtr f = node(ExprKind::Filter, line, std::move(parts));
        f->name = name;
        f->filter = find_filter(name);
        if (!f->filter) {
            if (jinja_has_filter(name)) fail(ErrorKind::Unsupported, line, "the filter '" + name + "' is not supported");
            fail(ErrorKind::Format, line, "no filter named '" + name + "'");
        }
        if (is_op("(")) parse_call_args(*f);
        subject = std::move(f);
    }
    return subject;
}

ExprPtr Parser::parse_test(ExprPtr subject) {
    const int line = cur().line;
    next();  // is
    const bool negated = skip_name("not");
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    std::vector<ExprPtr> parts;
    parts.push_back(std::move(subject));
    ExprPtr t = node(ExprKind::Test, line, std::move(parts));
    t->name = name;
    t->test = find_test(name);
    if (!t->test) {
        if (jinja_has_test(name)) fail(ErrorKind::Unsupported, line, "the test '" + name + "' is not supported");
        fail(ErrorKind::Format, line, "no test named '" + name + "'");
    }
    const TokenType type = cur().type;
    if (is_op("(")) {
        parse_call_args(*t);
    } else if ((type == TokenType::Name || type == TokenType::String || type == TokenType::Integer ||
                type == TokenType::Float || is_op("[") || is_op("{")) &&
               !is_name_in({"else", "or", "and"})) {
        // jinja2 takes one bare argument: `x is divisibleby 3`, `x is sameas none`.
        if (is_name("is")) fail_here("you cannot chain multiple tests with is");
        ExprPtr argument = parse_postfix(parse_primary());
        t->depth = std::max(t->depth, argument->depth + 1);
        t->operands.push_back(std::move(argument));
    }
    return negated ? operands(ExprKind::Not, line, std::move(t)) : std::move(t);
}

}  // namespace lorascope::chat
