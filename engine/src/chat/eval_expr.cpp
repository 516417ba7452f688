// Expressions: names, literals, operators, calls, filters and tests.
#include "chat/evaluator.h"
#include "chat/objects.h"
#include "chat/operators.h"
#include "chat/render_error.h"
#include "chat/py_text.h"
#include "chat/value_text.h"

#include <optional>

namespace lorascope::chat {

using ast::ExprKind;

Value Evaluator::eval(const ast::Expr& e) {
    return at_line(e.line, [&] { return eval_inner(e); });
}

Value Evaluator::eval_inner(const ast::Expr& e) {
    switch (e.kind) {
        case ExprKind::Literal: return e.literal;
        case ExprKind::Name: return eval_name(e);
        case ExprKind::List:
        case ExprKind::Tuple:
        case ExprKind::Dict: return eval_literal_container(e);
        case ExprKind::GetAttr: return getattr(eval(*e.operands[0]), e.name);
        case ExprKind::GetItem: {
            const Value object = eval(*e.operands[0]);
            return getitem(object, eval(*e.operands[1]));
        }
        case ExprKind::Slice: return eval_slice(e);
        case ExprKind::Call: return eval_call(e);
        case ExprKind::Filter: return eval_filter(e, nullptr);
        case ExprKind::Test: return Value::boolean(eval_test(e));
        case ExprKind::Not: return Value::boolean(!eval(*e.operands[0]).truthy());
        case ExprKind::Negative: return negate(eval(*e.operands[0]));
        case ExprKind::Positive: return positive(eval(*e.operands[0]));
        case ExprKind::Binary: {
            const Value a = eval(*e.operands[0]);
            return binary_op(*this, e.binary_op, a, eval(*e.operands[1]));
        }
        case ExprKind::And: {
            Value a = eval(*e.operands[0]);
            return a.truthy() ? eval(*e.operands[1]) : a;
        }
        case ExprKind::Or: {
            Value a = eval(*e.operands[0]);
            return a.truthy() ? a : eval(*e.operands[1]);
        }
        case ExprKind::Compare: return eval_compare(e);
        case ExprKind::Concat: return eval_concat(e);
        case ExprKind::Conditional:
            if (eval(*e.operands[0]).truthy()) return eval(*e.operands[1]);
            if (e.operands[2]) return eval(*e.operands[2]);
            return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                                    " evaluated to false and no else section was defined.");
    }
    return Value();
}

Value Evaluator::eval_name(const ast::Expr& e) {
    for (Scope* s = scope_.get(); s; s = s->parent.get())
        if (Value* v = s->find_local(e.name)) return *v;
    for (const auto& [name, value] : context_)
        if (name == e.name) return value;
    Value global = find_global(e.name);
    if (!global.is_undefined()) return global;
    if (jinja_has_global(e.name)) fail_unsupported("the global '" + e.name + "' is not supported");
    return Value::undefined("'" + e.name + "' is undefined");
}

Value Evaluator::eval_literal_container(const ast::Expr& e) {
    if (e.kind == ExprKind::Dict) {
        std::vector<std::pair<Value, Value>> items;
        for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
            Value key = eval(*e.operands[i]);
            items.emplace_back(std::move(key), eval(*e.operands[i + 1]));
        }
        return make_dict(std::move(items));
    }
    std::vector<Value> items;
    for (const auto& item : e.operands) items.push_back(eval(*item));
    return make_sequence(std::move(items), e.kind == ExprKind::Tuple ? SeqKind::Tuple : SeqKind::List);
}

namespace {

// Python's slice.indices(): the start, stop and step to walk for a sequence of `length` items.
struct SliceWalk {
    int64_t start, stop, step;
};

std::optional<int64_t> slice_bound(const Value& v) {
    if (v.is_none()) return std::nullopt;
    return v.as_int();
}

SliceWalk adjust(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step, int64_t length) {
    auto clamp = [&](std::optional<int64_t> i, int64_t if_absent) {
        if (!i) return if_absent;
        int64_t x = *i;
        if (x < 0) {
            x += length;
            if (x < 0) x = step < 0 ? -1 : 0;
        } else if (x >= length) {
            x = step < 0 ? length - 1 : length;
        }
        return x;
    };
    return {clamp(start, step < 0 ? length - 1 : 0), clamp(stop, step < 0 ? -1 : length), step};
}

}  // namespace

Value Evaluator::eval_slice(const ast::Expr& e) {
    const Value object = eval(*e.operands[0]);
    Value parts[3] = {Value::none(), Value::none(), Value::none()};
    for (int i = 0; i < 3; ++i)
        if (e.operands[static_cast<size_t>(i) + 1]) parts[i] = eval(*e.operands[static_cast<size_t>(i) + 1]);
    if (object.is_undefined()) fail_undefined(object);
    const bool sliceable = object.is_string() || object.is_list_or_tuple();
    if (object.is_sequence() && object.as_sequence().kind == SeqKind::Range)
        fail_unsupported("slicing a range is not supported");
    for (const Value& p : parts)
        if (!p.is_none() && !p.is_integral()) return Value::undefined("slice indices must be integers or None");
    if (!sliceable) return Value::undefined("'" + object.type_name() + "' object is not subscriptable");
    const int64_t step = parts[2].is_none() ? 1 : parts[2].as_int();
    if (step == 0) fail_type("slice step cannot be zero");
    if (object.is_string()) {
        const std::string& s = object.as_string();
        const auto offsets = code_point_offsets(s);
        const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
        const SliceWalk w = adjust(slice_bound(parts[0]), slice_bound(parts[1]), step, n);
        charge_bytes(s.size());
        std::string out;
        for (int64_t i = w.start; step > 0 ? i < w.stop : i > w.stop; i += step)
            out.append(s, offsets[static_cast<size_t>(i)], offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)]);
        return Value::string(std::move(out));
    }
    const auto& items = object.as_sequence().items;
    const SliceWalk w = adjust(slice_bound(parts[0]), slice_bound(parts[1]), step, static_cast<int64_t>(items.size()));
    std::vector<Value> out;
    for (int64_t i = w.start; step > 0 ? i < w.stop : i > w.stop; i += step) out.push_back(items[static_cast<size_t>(i)]);
    return make_sequence(std::move(out), object.as_sequence().kind);
}

CallArgs Evaluator::eval_args(const ast::Expr& e, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.operands.size(); ++i) args.positional.push_back(eval(*e.operands[i]));
    for (const auto& kw : e.keywords) args.keywords.emplace_back(kw.name, eval(*kw.value));
    return args;
}

Value Evaluator::eval_call(const ast::Expr& e) {
    const Value callee = eval(*e.operands[0]);
    CallArgs args = eval_args(e, 1);
    return call(callee, args);
}

Value Evaluator::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (callee.is_object())
        if (const auto* c = dynamic_cast<const Callable*>(&callee.as_object())) return c->call(*this, args);
    if (callee.is_object() && dynamic_cast<const LoopContext*>(&callee.as_object()))
        fail_unsupported("calling loop() (recursive loops) is not supported");
    fail_type("'" + callee.type_name() + "' object is not callable");
}

Value Evaluator::eval_filter(const ast::Expr& e, const Value* subject_override) {
    Value subject;
    if (e.operands[0]) subject = subject_override ? apply_filter_chain(*e.operands[0], *subject_override) : eval(*e.operands[0]);
    else if (subject_override) subject = *subject_override;
    CallArgs args = eval_args(e, 1);
    return e.filter(*this, subject, args);
}

Value Evaluator::apply_filter_chain(const ast::Expr& filter, const Value& subject) {
    return at_line(filter.line, [&] { return eval_filter(filter, &subject); });
}

bool Evaluator::eval_test(const ast::Expr& e) {
    const Value subject = eval(*e.operands[0]);
    CallArgs args = eval_args(e, 1);
    return e.test(*this, subject, args);
}

Value Evaluator::eval_compare(const ast::Expr& e) {
    Value left = eval(*e.operands[0]);
    for (size_t i = 0; i < e.compare_ops.size(); ++i) {
        Value right = eval(*e.operands[i + 1]);
        bool result = false;
        int64_t work = 0;
        switch (e.compare_ops[i]) {
            case ast::CompareOp::Equal: result = py_equal(left, right, &work); break;
            case ast::CompareOp::NotEqual: result = !py_equal(left, right, &work); break;
            case ast::CompareOp::In: result = contains(*this, right, left); break;
            case ast::CompareOp::NotIn: result = !contains(*this, right, left); break;
            default: result = ordered(*this, e.compare_ops[i], left, right);
        }
        charge(work);
        if (!result) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

Value Evaluator::eval_concat(const ast::Expr& e) {
    std::string out;
    for (const auto& part : e.operands) {
        out += py_str(eval(*part));
        check_string(out);
    }
    charge_bytes(out.size());
    return Value::string(std::move(out));
}

}  // namespace lorascope::chat
