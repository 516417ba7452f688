// Statements: output, if, for, set, with, filter blocks; scopes, limits and error positions.
#include "chat/evaluator.h"

#include "chat/objects.h"
#include "chat/render_error.h"
#include "chat/value_text.h"

#include <unordered_map>

namespace lorascope::chat {

Value* Scope::find_local(const std::string& name) {
    for (auto& [n, v] : vars)
        if (n == name) return &v;
    return nullptr;
}

void Scope::set(const std::string& name, Value value) {
    if (Value* existing = find_local(name)) *existing = std::move(value);
    else vars.emplace_back(name, std::move(value));
}

Evaluator::Evaluator(const ast::Body& program, const std::string& origin, const ChatTemplateLimits& limits,
                     std::vector<std::pair<std::string, Value>> context, std::optional<ChatClock> clock)
    : program_(program), origin_(origin), limits_(limits), context_(std::move(context)), clock_(clock),
      scope_(std::make_shared<Scope>()) {}

std::string Evaluator::render() {
    std::string out;
    out_ = &out;
    exec_body(program_);
    out_ = nullptr;
    return out;
}

void Evaluator::fail(ErrorKind kind, int line, const std::string& message) const {
    throw Error(kind, origin_, "line " + std::to_string(line) + ": " + message);
}

Evaluator::DepthGuard::DepthGuard(Evaluator& evaluator, int line) : ev(evaluator) {
    if (++ev.depth_ > 4 * ev.limits_.max_depth) {
        --ev.depth_;
        ev.fail(ErrorKind::Unsafe, line, "evaluation nested deeper than the limit (" + std::to_string(4 * ev.limits_.max_depth) +
                                             "; a macro calling itself?)");
    }
}

void Evaluator::charge(int64_t units) {
    steps_ += units;
    if (steps_ > limits_.max_steps)
        throw RenderError(ErrorKind::Unsafe, "the render took more than the limit of " + std::to_string(limits_.max_steps) + " steps");
}

void Evaluator::check_string(const std::string& s) const {
    if (static_cast<int64_t>(s.size()) > limits_.max_output_bytes)
        throw RenderError(ErrorKind::Unsafe, "a string longer than the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
}

Value Evaluator::make_sequence(std::vector<Value> items, SeqKind kind) {
    charge(static_cast<int64_t>(items.size()));
    if (static_cast<int64_t>(items.size()) > limits_.max_output_bytes)
        throw RenderError(ErrorKind::Unsafe, "a list longer than the limit of " + std::to_string(limits_.max_output_bytes) + " items");
    Value v = Value::sequence(std::move(items), kind);
    if (v.depth() > limits_.max_depth)
        throw RenderError(ErrorKind::Unsafe, "lists and dicts nested deeper than the limit of " + std::to_string(limits_.max_depth));
    return v;
}

Value Evaluator::make_dict(std::vector<std::pair<Value, Value>> items) {
    charge(static_cast<int64_t>(items.size()));
    std::vector<std::pair<Value, Value>> unique;
    std::unordered_map<std::string, size_t> string_keys;
    for (auto& item : items) {
        if (!hashable(item.first)) fail_type("unhashable type: '" + item.first.type_name() + "'");
        // A repeated key keeps its first position and takes the last value, as in Python.
        size_t at = unique.size();
        if (item.first.is_string()) {
            at = string_keys.emplace(item.first.as_string(), unique.size()).first->second;
        } else {
            for (size_t i = 0; i < unique.size() && at == unique.size(); ++i) {
                charge(1);
                if (!unique[i].first.is_string() && py_equal(unique[i].first, item.first)) at = i;
            }
        }
        if (at < unique.size()) unique[at].second = std::move(item.second);
        else unique.push_back(std::move(item));
    }
    Value v = Value::dict(std::move(unique));
    if (v.depth() > limits_.max_depth)
        throw RenderError(ErrorKind::Unsafe, "lists and dicts nested deeper than the limit of " + std::to_string(limits_.max_depth));
    return v;
}

void Evaluator::write(const std::string& text, int line) {
    out_->append(text);
    if (static_cast<int64_t>(out_->size()) > limits_.max_output_bytes)
        fail(ErrorKind::Unsafe, line, "the output is longer than the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
}

Evaluator::Flow Evaluator::exec_body(const ast::Body& body) {
    for (const auto& s : body) {
        const Flow flow = exec(*s);
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

std::string Evaluator::capture(const ast::Body& body, const std::shared_ptr<Scope>& scope) {
    std::string captured;
    std::string* const saved_out = out_;
    const std::shared_ptr<Scope> saved_scope = scope_;
    out_ = &captured;
    scope_ = scope;
    try {
        exec_body(body);
    } catch (...) {
        out_ = saved_out;
        scope_ = saved_scope;
        throw;
    }
    out_ = saved_out;
    scope_ = saved_scope;
    return captured;
}

Value Evaluator::eval_in(const ast::Expr& e, const std::shared_ptr<Scope>& scope) {
    const std::shared_ptr<Scope> saved = scope_;
    scope_ = scope;
    try {
        Value v = eval(e);
        scope_ = saved;
        return v;
    } catch (...) {
        scope_ = saved;
        throw;
    }
}

Evaluator::Flow Evaluator::exec(const ast::Stmt& s) {
    return at_line(s.line, [&] { return exec_inner(s); });
}

Evaluator::Flow Evaluator::exec_inner(const ast::Stmt& s) {
    switch (s.kind) {
        case ast::StmtKind::Text: write(s.text, s.line); return Flow::Normal;
        case ast::StmtKind::Output: {
            const Value v = eval(*s.exprs[0]);
            std::string text = py_str(v);
            charge_bytes(text.size());
            write(text, s.line);
            return Flow::Normal;
        }
        case ast::StmtKind::If:
            for (size_t i = 0; i < s.exprs.size(); ++i)
                if (eval(*s.exprs[i]).truthy()) return exec_body(s.bodies[i]);
            return s.bodies.size() > s.exprs.size() ? exec_body(s.bodies.back()) : Flow::Normal;
        case ast::StmtKind::For: return exec_for(s);
        case ast::StmtKind::Set: exec_set(s); return Flow::Normal;
        case ast::StmtKind::SetAttribute: exec_set_attribute(s.name, s.attribute, eval(*s.exprs[0]), s.line); return Flow::Normal;
        case ast::StmtKind::SetBlock: exec_set_block(s); return Flow::Normal;
        case ast::StmtKind::Macro:
            scope_->set(s.name, Value::object(std::make_shared<Macro>(s, scope_)));
            return Flow::Normal;
        case ast::StmtKind::FilterBlock: {
            const std::string text = capture(s.bodies[0], scope_);
            const std::string filtered = py_str(apply_filter_chain(*s.exprs[0], Value::string(text)));
            write(filtered, s.line);
            return Flow::Normal;
        }
        case ast::StmtKind::Break: return Flow::Break;
        case ast::StmtKind::Continue: return Flow::Continue;
        case ast::StmtKind::With: exec_with(s); return Flow::Normal;
        case ast::StmtKind::Generation: return exec_body(s.bodies[0]);
    }
    return Flow::Normal;
}

std::vector<Value> Evaluator::loop_items(const ast::Stmt& s, const Value& iterable) {
    std::vector<Value> items = iterate(iterable);
    if (!s.exprs[1]) return items;
    // The filter sees each item under the loop's names, without `loop` (as in jinja2).
    std::vector<Value> kept;
    const std::shared_ptr<Scope> saved = scope_;
    for (Value& item : items) {
        scope_ = std::make_shared<Scope>();
        scope_->parent = saved;
        try {
            bind_targets(s.targets, s.tuple_target, item);
            const bool keep = eval(*s.exprs[1]).truthy();
            scope_ = saved;
            if (keep) kept.push_back(std::move(item));
        } catch (...) {
            scope_ = saved;
            throw;
        }
    }
    return kept;
}

Evaluator::Flow Evaluator::exec_for(const ast::Stmt& s) {
    const auto items = std::make_shared<const std::vector<Value>>(loop_items(s, eval(*s.exprs[0])));
    const std::shared_ptr<Scope> outer = scope_;
    for (size_t i = 0; i < items->size(); ++i) {
        if (++loop_iterations_ > limits_.max_loop_iterations)
            throw RenderError(ErrorKind::Unsafe, "loops ran more than the limit of " + std::to_string(limits_.max_loop_iterations) + " iterations");
        scope_ = std::make_shared<Scope>();
        scope_->parent = outer;
        Flow flow = Flow::Normal;
        try {
            bind_targets(s.targets, s.tuple_target, (*items)[i]);
            scope_->set("loop", Value::object(std::make_shared<LoopContext>(items, i)));
            flow = exec_body(s.bodies[0]);
        } catch (...) {
            scope_ = outer;
            throw;
        }
        scope_ = outer;
        if (flow == Flow::Break) break;
    }
    if (items->empty()) return exec_body(s.bodies[1]);
    return Flow::Normal;
}

void Evaluator::bind_targets(const std::vector<std::string>& targets, bool tuple_target, const Value& value) {
    if (!tuple_target) {
        scope_->set(targets[0], value);
        return;
    }
    const std::vector<Value> parts = iterate(value);
    if (parts.size() != targets.size())
        fail_type(parts.size() < targets.size() ? "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                                                      std::to_string(parts.size()) + ")"
                                                : "too many values to unpack (expected " + std::to_string(targets.size()) + ")");
    for (size_t i = 0; i < targets.size(); ++i) scope_->set(targets[i], parts[i]);
}

void Evaluator::exec_set(const ast::Stmt& s) { bind_targets(s.targets, s.tuple_target, eval(*s.exprs[0])); }

void Evaluator::exec_set_attribute(const std::string& name, const std::string& attribute, Value value, int line) {
    Value target;
    for (Scope* sc = scope_.get(); sc && target.is_undefined(); sc = sc->parent.get())
        if (Value* v = sc->find_local(name)) target = *v;
    auto* ns = target.is_object() ? dynamic_cast<Namespace*>(&target.as_object()) : nullptr;
    if (!ns) fail(ErrorKind::InvalidArgument, line, "cannot assign attribute on non-namespace object");
    // A namespace inside a namespace could hold itself; the engine keeps values acyclic.
    if (value.holds_objects())
        fail(ErrorKind::Unsupported, line, "storing a namespace, loop or function in a namespace is not supported");
    ns->set(attribute, std::move(value));
}

void Evaluator::exec_set_block(const ast::Stmt& s) {
    const std::string text = capture(s.bodies[0], scope_);
    Value value = s.exprs[0] ? apply_filter_chain(*s.exprs[0], Value::string(text)) : Value::string(text);
    if (!s.attribute.empty()) exec_set_attribute(s.name, s.attribute, std::move(value), s.line);
    else scope_->set(s.targets[0], std::move(value));
}

void Evaluator::exec_with(const ast::Stmt& s) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope_;
    for (size_t i = 0; i < s.targets.size(); ++i) inner->set(s.targets[i], eval(*s.exprs[i]));  // values see the outer scope
    const std::shared_ptr<Scope> saved = scope_;
    scope_ = inner;
    try {
        exec_body(s.bodies[0]);
    } catch (...) {
        scope_ = saved;
        throw;
    }
    scope_ = saved;
}

}  // namespace lorascope::chat
