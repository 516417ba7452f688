// jinja2's tests (`x is defined`, `x is string`, `x is eq 3`, ...), as jinja2 3.1 defines them.
#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/objects.h"
#include "chat/operators.h"
#include "chat/py_text.h"
#include "chat/render_error.h"
#include "chat/value_text.h"

#include <cmath>
#include <unordered_map>

namespace lorascope::chat {

namespace {

void no_args(const char* name, CallArgs& args) { bind_args(name, args, {}); }

Value one_arg(const char* name, CallArgs& args) { return bind_args(name, args, {{"other", std::nullopt}})[0]; }

bool t_defined(Evaluator&, const Value& v, CallArgs& a) { no_args("defined", a); return !v.is_undefined(); }
bool t_undefined(Evaluator&, const Value& v, CallArgs& a) { no_args("undefined", a); return v.is_undefined(); }
bool t_none(Evaluator&, const Value& v, CallArgs& a) { no_args("none", a); return v.is_none(); }
bool t_boolean(Evaluator&, const Value& v, CallArgs& a) { no_args("boolean", a); return v.is_bool(); }
bool t_false(Evaluator&, const Value& v, CallArgs& a) { no_args("false", a); return v.is_bool() && !v.as_bool(); }
bool t_true(Evaluator&, const Value& v, CallArgs& a) { no_args("true", a); return v.is_bool() && v.as_bool(); }
bool t_integer(Evaluator&, const Value& v, CallArgs& a) { no_args("integer", a); return v.is_int(); }
bool t_float(Evaluator&, const Value& v, CallArgs& a) { no_args("float", a); return v.is_float(); }
bool t_number(Evaluator&, const Value& v, CallArgs& a) { no_args("number", a); return v.is_number(); }
bool t_string(Evaluator&, const Value& v, CallArgs& a) { no_args("string", a); return v.is_string(); }
bool t_mapping(Evaluator&, const Value& v, CallArgs& a) { no_args("mapping", a); return v.is_dict(); }

bool t_iterable(Evaluator&, const Value& v, CallArgs& a) {
    no_args("iterable", a);
    if (v.is_object()) return dynamic_cast<const LoopContext*>(&v.as_object()) != nullptr;
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
}

// len() and __getitem__: str, list, tuple, range, dict (and jinja2's Undefined); not views or generators.
bool t_sequence(Evaluator&, const Value& v, CallArgs& a) {
    no_args("sequence", a);
    if (v.is_sequence()) {
        const SeqKind k = v.as_sequence().kind;
        return k == SeqKind::List || k == SeqKind::Tuple || k == SeqKind::Range;
    }
    return v.is_undefined() || v.is_string() || v.is_dict();
}

bool t_callable(Evaluator&, const Value& v, CallArgs& a) {
    no_args("callable", a);
    // jinja2's Undefined and LoopContext both define __call__.
    return v.is_undefined() || (v.is_object() && (v.as_object().callable() || dynamic_cast<const LoopContext*>(&v.as_object())));
}

Value modulo(Evaluator& ev, const Value& v, const Value& n) { return binary_op(ev, ast::BinaryOp::Modulo, v, n); }

bool t_odd(Evaluator& ev, const Value& v, CallArgs& a) {
    no_args("odd", a);
    return py_equal(modulo(ev, v, Value::integer(2)), Value::integer(1));
}

bool t_even(Evaluator& ev, const Value& v, CallArgs& a) {
    no_args("even", a);
    return py_equal(modulo(ev, v, Value::integer(2)), Value::integer(0));
}

bool t_divisibleby(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value n = bind_args("divisibleby", a, {{"num", std::nullopt}})[0];
    return py_equal(modulo(ev, v, n), Value::integer(0));
}

std::string text_for_case(const Value& v) {
    const std::string s = py_str(v);
    if (!is_ascii(s)) fail_unsupported("case tests on non-ASCII text are not supported (no Unicode case tables)");
    return s;
}

bool t_lower(Evaluator&, const Value& v, CallArgs& a) { no_args("lower", a); return ascii_islower(text_for_case(v)); }
bool t_upper(Evaluator&, const Value& v, CallArgs& a) { no_args("upper", a); return ascii_isupper(text_for_case(v)); }

bool t_eq(Evaluator& ev, const Value& v, CallArgs& a) {
    int64_t work = 0;
    const bool r = py_equal(v, one_arg("eq", a), &work);
    ev.charge(work);
    return r;
}
bool t_ne(Evaluator& ev, const Value& v, CallArgs& a) {
    int64_t work = 0;
    const bool r = !py_equal(v, one_arg("ne", a), &work);
    ev.charge(work);
    return r;
}
bool t_lt(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, ast::CompareOp::Less, v, one_arg("lt", a)); }
bool t_le(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, ast::CompareOp::LessEqual, v, one_arg("le", a)); }
bool t_gt(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, ast::CompareOp::Greater, v, one_arg("gt", a)); }
bool t_ge(Evaluator& ev, const Value& v, CallArgs& a) { return ordered(ev, ast::CompareOp::GreaterEqual, v, one_arg("ge", a)); }

bool t_in(Evaluator& ev, const Value& v, CallArgs& a) {
    const Value seq = bind_args("in", a, {{"seq", std::nullopt}})[0];
    return contains(ev, seq, v);
}

}  // namespace

TestFn find_test(const std::string& name) {
    static const std::unordered_map<std::string, TestFn> kTests = {
        {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
        {"false", t_false}, {"true", t_true}, {"integer", t_integer}, {"float", t_float}, {"number", t_number},
        {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable}, {"sequence", t_sequence},
        {"callable", t_callable}, {"odd", t_odd}, {"even", t_even}, {"divisibleby", t_divisibleby},
        {"lower", t_lower}, {"upper", t_upper}, {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"ne", t_ne},
        {"!=", t_ne}, {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le}, {"<=", t_le}, {"gt", t_gt},
        {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge}, {"in", t_in},
    };
    const auto it = kTests.find(name);
    return it == kTests.end() ? nullptr : it->second;
}

}  // namespace lorascope::chat
