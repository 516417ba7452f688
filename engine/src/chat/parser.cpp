#include "chat/parser.h"

#include "chat/parser_impl.h"

namespace lorascope::chat {

namespace {

// Tags jinja2 knows that this engine leaves out; anything else unknown is jinja2's own error too.
const char* const kUnsupportedTags[] = {"block", "extends", "include", "import", "from", "call", "autoescape", "raw"};

// Whether a body (at any depth) assigns a namespace attribute.
bool assigns_namespace(const ast::Body& body) {
    for (const auto& s : body) {
        if (s->kind == ast::StmtKind::SetAttribute || (s->kind == ast::StmtKind::SetBlock && !s->attribute.empty())) return true;
        for (const auto& inner : s->bodies)
            if (assigns_namespace(inner)) return true;
    }
    return false;
}

}  // namespace

ast::Body parse_template(const std::vector<Token>& tokens, const std::string& origin, int max_depth) {
    return Parser(tokens, origin, max_depth).parse();
}

// ---- tokens ----

bool Parser::is_name_in(std::initializer_list<const char*> names) const {
    for (const char* n : names)
        if (is_name(n)) return true;
    return false;
}

bool Parser::skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
}

bool Parser::skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
}

void Parser::expect_op(const char* op) {
    if (!skip_op(op)) fail_here(std::string("expected '") + op + "', got " + describe_current());
}

void Parser::expect(TokenType type) {
    if (cur().type != type) fail_here(std::string("expected ") + describe(type) + ", got " + describe_current());
    next();
}

std::string Parser::expect_name() {
    if (cur().type != TokenType::Name) fail_here("expected a name, got " + describe_current());
    std::string name = cur().text;
    next();
    return name;
}

std::string Parser::describe_current() const {
    const Token& t = cur();
    if (t.type == TokenType::Name || t.type == TokenType::Operator) return "'" + t.text + "'";
    return describe(t.type);
}

void Parser::fail(ErrorKind kind, int line, const std::string& message) const {
    throw Error(kind, origin_, "line " + std::to_string(line) + ": " + message);
}

Parser::DepthGuard::DepthGuard(Parser& parser, int line) : p(parser) {
    if (++p.depth_ > p.max_depth_)
        p.fail(ErrorKind::Unsafe, line, "statements and expressions nested deeper than the limit of " + std::to_string(p.max_depth_));
}

int Parser::depth_of(const ast::Expr* e) const { return e ? e->depth : 0; }

ast::ExprPtr Parser::node(ast::ExprKind kind, int line, std::vector<ast::ExprPtr> operands) {
    auto e = std::make_unique<ast::Expr>();
    e->kind = kind;
    e->line = line;
    int deepest = 0;
    for (const auto& o : operands) deepest = std::max(deepest, depth_of(o.get()));
    e->depth = deepest + 1;
    // Left-leaning chains (a + b + c ...) are built in loops: their depth is checked here.
    if (e->depth + depth_ > max_depth_)
        fail(ErrorKind::Unsafe, line, "an expression nested deeper than the limit of " + std::to_string(max_depth_));
    e->operands = std::move(operands);
    return e;
}

// ---- statements ----

ast::Body Parser::parse() {
    ast::Body body = subparse({});
    if (cur().type != TokenType::End) fail_here("unexpected " + describe_current());
    return body;
}

ast::StmtPtr Parser::stmt(ast::StmtKind kind, int line) {
    auto s = std::make_unique<ast::Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
}

// Statements until a block tag whose first name is one of end_names (left as the current token),
// or the end of the template.
ast::Body Parser::subparse(std::initializer_list<const char*> end_names) {
    ast::Body body;
    while (cur().type != TokenType::End) {
        const Token& t = cur();
        if (t.type == TokenType::Data) {
            auto s = stmt(ast::StmtKind::Text, t.line);
            s->text = t.text;
            body.push_back(std::move(s));
            next();
        } else if (t.type == TokenType::VariableBegin) {
            next();
            auto s = stmt(ast::StmtKind::Output, t.line);
            s->exprs.push_back(parse_tuple(true));
            expect(TokenType::VariableEnd);
            body.push_back(std::move(s));
        } else if (t.type == TokenType::BlockBegin) {
            next();
            if (end_names.size() && is_name_in(end_names)) return body;
            parse_statement(body);
            expect(TokenType::BlockEnd);
        } else {
            fail_here("unexpected " + describe_current());
        }
    }
    return body;
}

ast::Body Parser::parse_statements(std::initializer_list<const char*> end_names, bool drop_needle) {
    skip_op(":");
    expect(TokenType::BlockEnd);
    ast::Body body = subparse(end_names);
    if (cur().type == TokenType::End) {
        std::string expected;
        for (const char* n : end_names) expected += std::string(expected.empty() ? "" : " or ") + "'" + n + "'";
        fail_here("unexpected end of template, expected " + expected);
    }
    if (drop_needle) next();
    return body;
}

void Parser::parse_statement(ast::Body& body) {
    const Token& t = cur();
    if (t.type != TokenType::Name) fail_here("tag name expected");
    DepthGuard guard(*this, t.line);
    const std::string& tag = t.text;
    if (tag == "for") return body.push_back(parse_for());
    if (tag == "if") return body.push_back(parse_if());
    if (tag == "set") return body.push_back(parse_set());
    if (tag == "macro") return body.push_back(parse_macro());
    if (tag == "filter") return body.push_back(parse_filter_block());
    if (tag == "with") return body.push_back(parse_with());
    if (tag == "print") return parse_print(body);
    if (tag == "break") return body.push_back(parse_loop_control(ast::StmtKind::Break));
    if (tag == "continue") return body.push_back(parse_loop_control(ast::StmtKind::Continue));
    if (tag == "generation") {  // transformers' AssistantTracker: renders its body unchanged
        auto s = stmt(ast::StmtKind::Generation, t.line);
        next();
        s->bodies.push_back(parse_statements({"endgeneration"}, true));
        return body.push_back(std::move(s));
    }
    for (const char* unsupported : kUnsupportedTags)
        if (tag == unsupported) fail(ErrorKind::Unsupported, t.line, "{% " + tag + " %} is not supported");
    fail(ErrorKind::Format, t.line, "unknown tag '" + tag + "'");
}

// Names, or names with commas (a tuple), up to `extra_end` or the end of the tag.
std::vector<std::string> Parser::parse_targets(const char* extra_end, bool& tuple_target) {
    std::vector<std::string> names;
    tuple_target = false;
    while (true) {
        if (!names.empty()) expect_op(",");
        if (is_tuple_end(extra_end)) break;
        const int line = cur().line;
        if (cur().type != TokenType::Name || is_name_in({"true", "false", "True", "False", "none", "None"}))
            fail(is_op("(") ? ErrorKind::Unsupported : ErrorKind::Format, line,
                 is_op("(") ? "nested assignment targets are not supported" : "can't assign to " + describe_current());
        names.push_back(expect_name());
        if (is_op(".")) fail(ErrorKind::Unsupported, line, "assigning to an attribute here is not supported");
        if (!is_op(",")) break;
        tuple_target = true;
    }
    if (names.empty()) fail_here("expected an assignment target, got " + describe_current());
    return names;
}

ast::StmtPtr Parser::parse_for() {
    auto s = stmt(ast::StmtKind::For, cur().line);
    next();
    s->targets = parse_targets("in", s->tuple_target);
    if (!skip_name("in")) fail_here("expected 'in', got " + describe_current());
    s->exprs.push_back(parse_tuple(false));
    s->exprs.push_back(skip_name("if") ? parse_expression() : nullptr);
    if (is_name("recursive")) fail(ErrorKind::Unsupported, cur().line, "recursive for loops are not supported");
    ++loop_depth_;
    s->bodies.push_back(parse_statements({"endfor", "else"}, false));
    --loop_depth_;
    // The evaluator filters a loop's items before its first iteration; jinja2 filters each item as
    // the loop reaches it, so a filter reading a namespace the body changes would see other values.
    if (s->exprs[1] && assigns_namespace(s->bodies[0]))
        fail(ErrorKind::Unsupported, s->line, "a for loop with an `if` filter whose body assigns namespace attributes is not supported");
    const bool has_else = is_name("else");
    next();
    s->bodies.push_back(has_else ? parse_statements({"endfor"}, true) : ast::Body{});
    return s;
}

ast::StmtPtr Parser::parse_if() {
    auto s = stmt(ast::StmtKind::If, cur().line);
    next();
    while (true) {
        s->exprs.push_back(parse_tuple(false));
        s->bodies.push_back(parse_statements({"elif", "else", "endif"}, false));
        const std::string token = cur().text;
        next();
        if (token == "elif") continue;
        if (token == "else") s->bodies.push_back(parse_statements({"endif"}, true));
        break;
    }
    return s;
}

ast::StmtPtr Parser::parse_set() {
    const int line = cur().line;
    next();
    if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().text == ".") {
        auto s = stmt(ast::StmtKind::SetAttribute, line);
        s->name = expect_name();
        next();
        s->attribute = expect_name();
        if (skip_op("=")) {
            s->exprs.push_back(parse_tuple());
            return s;
        }
        s->kind = ast::StmtKind::SetBlock;
        s->exprs.push_back(parse_filter(nullptr));
        s->bodies.push_back(parse_statements({"endset"}, true));
        return s;
    }
    auto s = stmt(ast::StmtKind::Set, line);
    s->targets = parse_targets(nullptr, s->tuple_target);
    if (skip_op("=")) {
        s->exprs.push_back(parse_tuple());
        return s;
    }
    if (s->tuple_target) fail_here("expected '=', got " + describe_current());
    s->kind = ast::StmtKind::SetBlock;
    s->exprs.push_back(parse_filter(nullptr));
    s->bodies.push_back(parse_statements({"endset"}, true));
    return s;
}

ast::StmtPtr Parser::parse_macro() {
    auto s = stmt(ast::StmtKind::Macro, cur().line);
    next();
    s->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_name());
        if (skip_op("=")) s->exprs.push_back(parse_expression());
        else if (!s->exprs.empty()) fail_here("non-default argument follows default argument");
    }
    expect_op(")");
    const int outer_loops = loop_depth_;
    loop_depth_ = 0;
    s->bodies.push_back(parse_statements({"endmacro"}, true));
    loop_depth_ = outer_loops;
    return s;
}

ast::StmtPtr Parser::parse_filter_block() {
    auto s = stmt(ast::StmtKind::FilterBlock, cur().line);
    next();
    s->exprs.push_back(parse_filter(nullptr, true));
    s->bodies.push_back(parse_statements({"endfilter"}, true));
    return s;
}

ast::StmtPtr Parser::parse_with() {
    auto s = stmt(ast::StmtKind::With, cur().line);
    next();
    while (cur().type != TokenType::BlockEnd) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_name());
        expect_op("=");
        s->exprs.push_back(parse_expression());
    }
    s->bodies.push_back(parse_statements({"endwith"}, true));
    return s;
}

ast::StmtPtr Parser::parse_loop_control(ast::StmtKind kind) {
    const int line = cur().line;
    if (loop_depth_ == 0)
        fail(ErrorKind::Format, line, std::string(kind == ast::StmtKind::Break ? "'break'" : "'continue'") + " outside a loop");
    next();
    return stmt(kind, line);
}

void Parser::parse_print(ast::Body& body) {
    const int line = cur().line;
    next();
    bool first = true;
    while (cur().type != TokenType::BlockEnd) {
        if (!first) expect_op(",");
        first = false;
        auto s = stmt(ast::StmtKind::Output, line);
        s->exprs.push_back(parse_expression());
        body.push_back(std::move(s));
    }
}

}  // namespace lorascope::chat
