#include "chat/operators.h"

#include "chat/evaluator.h"
#include "chat/py_text.h"
#include "chat/render_error.h"

#include <cmath>
#include <limits>

namespace lorascope::chat {

namespace {

const char* symbol(ast::BinaryOp op) {
    switch (op) {
        case ast::BinaryOp::Add: return "+";
        case ast::BinaryOp::Subtract: return "-";
        case ast::BinaryOp::Multiply: return "*";
        case ast::BinaryOp::Divide: return "/";
        case ast::BinaryOp::FloorDivide: return "//";
        case ast::BinaryOp::Modulo: return "%";
        case ast::BinaryOp::Power: return "** or pow()";
    }
    return "?";
}

[[noreturn]] void fail_operands(ast::BinaryOp op, const Value& a, const Value& b) {
    fail_type(std::string("unsupported operand type(s) for ") + symbol(op) + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

[[noreturn]] void fail_overflow() { fail_unsupported("integer results beyond 64 bits are not supported"); }

// x op y where op is one of the __builtin_*_overflow checks (which cannot be passed themselves).
template <class Op>
int64_t checked(Op op, int64_t x, int64_t y) {
    int64_t r = 0;
    if (op(x, y, &r)) fail_overflow();
    return r;
}
int64_t checked_add(int64_t x, int64_t y) { return checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }, x, y); }
int64_t checked_sub(int64_t x, int64_t y) { return checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }, x, y); }
int64_t checked_mul(int64_t x, int64_t y) { return checked([](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }, x, y); }

int64_t int_power(int64_t base, int64_t exponent) {
    int64_t result = 1;
    while (exponent > 0) {
        if (exponent & 1) result = checked_mul(result, base);
        exponent >>= 1;
        if (exponent) base = checked_mul(base, base);
    }
    return result;
}

// CPython's float floor division and modulo (floatobject.c float_divmod).
std::pair<double, double> float_divmod(double vx, double wx) {
    if (wx == 0.0) fail_type("float division by zero");
    double mod = std::fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, wx);
    }
    double floordiv;
    if (div != 0.0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = std::copysign(0.0, vx / wx);
    }
    return {floordiv, mod};
}

Value arithmetic(ast::BinaryOp op, const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) {
        const int64_t x = a.as_int(), y = b.as_int();
        switch (op) {
            case ast::BinaryOp::Add: return Value::integer(checked_add(x, y));
            case ast::BinaryOp::Subtract: return Value::integer(checked_sub(x, y));
            case ast::BinaryOp::Multiply: return Value::integer(checked_mul(x, y));
            case ast::BinaryOp::Divide:
                if (y == 0) fail_type("division by zero");
                return Value::number(static_cast<double>(x) / static_cast<double>(y));
            case ast::BinaryOp::FloorDivide:
            case ast::BinaryOp::Modulo: {
                if (y == 0) fail_type("integer division or modulo by zero");
                if (x == std::numeric_limits<int64_t>::min() && y == -1) fail_overflow();
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    m += y;
                    q -= 1;
                }
                return Value::integer(op == ast::BinaryOp::FloorDivide ? q : m);
            }
            case ast::BinaryOp::Power:
                if (y >= 0) return Value::integer(int_power(x, y));
                if (x == 0) fail_type("0.0 cannot be raised to a negative power");
                return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
    }
    const double x = a.as_double(), y = b.as_double();
    switch (op) {
        case ast::BinaryOp::Add: return Value::number(x + y);
        case ast::BinaryOp::Subtract: return Value::number(x - y);
        case ast::BinaryOp::Multiply: return Value::number(x * y);
        case ast::BinaryOp::Divide:
            if (y == 0.0) fail_type("float division by zero");
            return Value::number(x / y);
        case ast::BinaryOp::FloorDivide: return Value::number(float_divmod(x, y).first);
        case ast::BinaryOp::Modulo: return Value::number(float_divmod(x, y).second);
        case ast::BinaryOp::Power:
            if (x == 0.0 && y < 0) fail_type("0.0 cannot be raised to a negative power");
            if (x < 0 && y != std::floor(y)) fail_unsupported("complex results (a negative number to a fractional power) are not supported");
            return Value::number(std::pow(x, y));
    }
    fail_operands(op, a, b);
}

// str * n, list * n, tuple * n (n may come first).
Value repeat(Evaluator& ev, const Value& seq, int64_t n) {
    if (n <= 0) return seq.is_string() ? Value::string("") : ev.make_sequence({}, seq.as_sequence().kind);
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        if (!s.empty() && static_cast<uint64_t>(n) > static_cast<uint64_t>(ev.limits().max_output_bytes) / s.size())
            throw RenderError(ErrorKind::Unsafe, "a string longer than the limit of " + std::to_string(ev.limits().max_output_bytes) + " bytes");
        ev.charge_bytes(s.size() * static_cast<size_t>(n));
        std::string out;
        out.reserve(s.size() * static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value::string(std::move(out));
    }
    const auto& items = seq.as_sequence().items;
    if (!items.empty() && static_cast<uint64_t>(n) > static_cast<uint64_t>(ev.limits().max_output_bytes) / items.size())
        throw RenderError(ErrorKind::Unsafe, "a list longer than the limit of " + std::to_string(ev.limits().max_output_bytes) + " items");
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return ev.make_sequence(std::move(out), seq.as_sequence().kind);
}

bool repeatable(const Value& v) { return v.is_string() || v.is_list_or_tuple(); }

Value add(Evaluator& ev, const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return arithmetic(ast::BinaryOp::Add, a, b);
    if (a.is_string() && b.is_string()) {
        std::string s = a.as_string() + b.as_string();
        ev.charge_bytes(s.size());
        ev.check_string(s);
        return Value::string(std::move(s));
    }
    if (a.is_list_or_tuple() && b.is_list_or_tuple() && a.as_sequence().kind == b.as_sequence().kind) {
        std::vector<Value> items = a.as_sequence().items;
        items.insert(items.end(), b.as_sequence().items.begin(), b.as_sequence().items.end());
        return ev.make_sequence(std::move(items), a.as_sequence().kind);
    }
    if (a.is_list_or_tuple() && b.is_list_or_tuple())
        fail_type("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
    if (a.is_string() && !b.is_string()) fail_type("can only concatenate str (not \"" + b.type_name() + "\") to str");
    fail_operands(ast::BinaryOp::Add, a, b);
}

int compare_numbers(const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    const long double x = a.is_float() ? a.as_double() : static_cast<long double>(a.as_int());
    const long double y = b.is_float() ? b.as_double() : static_cast<long double>(b.as_int());
    if (x < y) return -1;
    if (x > y) return 1;
    return x == y ? 0 : 2;  // 2: unordered (NaN)
}

// -1, 0, 1, or 2 when unordered (NaN); a RenderError when Python cannot order the two.
int three_way(Evaluator& ev, const Value& a, const Value& b, const char* op) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) return compare_numbers(a, b);
    if (a.is_string() && b.is_string()) {
        ev.charge_bytes(std::min(a.as_string().size(), b.as_string().size()));
        const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.is_list_or_tuple() && b.is_list_or_tuple() && a.as_sequence().kind == b.as_sequence().kind) {
        const auto& x = a.as_sequence().items;
        const auto& y = b.as_sequence().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            int64_t work = 0;
            const bool same = py_equal(x[i], y[i], &work);
            ev.charge(work);
            if (!same) return three_way(ev, x[i], y[i], op);
        }
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    fail_type(std::string("'") + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace

void fail_undefined(const Value& undefined) {
    const std::string& name = undefined.undefined_name();
    fail_type(name.empty() ? "a value is undefined" : name);
}

Value binary_op(Evaluator& ev, ast::BinaryOp op, const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (op == ast::BinaryOp::Add) return add(ev, a, b);
    if (op == ast::BinaryOp::Multiply) {
        if (repeatable(a) && b.is_integral()) return repeat(ev, a, b.as_int());
        if (a.is_integral() && repeatable(b)) return repeat(ev, b, a.as_int());
    }
    if (op == ast::BinaryOp::Modulo && a.is_string())
        fail_unsupported("printf-style string formatting (str % values) is not supported");
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    fail_operands(op, a, b);
}

Value negate(const Value& v) {
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_float()) return Value::number(-v.as_double());
    if (v.is_integral()) {
        if (v.as_int() == std::numeric_limits<int64_t>::min()) fail_overflow();
        return Value::integer(-v.as_int());
    }
    fail_type("bad operand type for unary -: '" + v.type_name() + "'");
}

Value positive(const Value& v) {
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_float()) return v;
    if (v.is_integral()) return Value::integer(v.as_int());
    fail_type("bad operand type for unary +: '" + v.type_name() + "'");
}

bool ordered(Evaluator& ev, ast::CompareOp op, const Value& a, const Value& b) {
    const char* text = op == ast::CompareOp::Less ? "<" : op == ast::CompareOp::LessEqual ? "<=" : op == ast::CompareOp::Greater ? ">" : ">=";
    const int c = three_way(ev, a, b, text);
    if (c == 2) return false;
    switch (op) {
        case ast::CompareOp::Less: return c < 0;
        case ast::CompareOp::LessEqual: return c <= 0;
        case ast::CompareOp::Greater: return c > 0;
        default: return c >= 0;
    }
}

bool contains(Evaluator& ev, const Value& container, const Value& item) {
    if (container.is_string()) {
        if (item.is_undefined()) fail_undefined(item);
        if (!item.is_string()) fail_type("'in <string>' requires string as left operand, not " + item.type_name());
        ev.charge_bytes(container.as_string().size());
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_dict()) {
        if (!hashable(item)) fail_type("unhashable type: '" + item.type_name() + "'");
        ev.charge(1);
        return container.as_dict().find(item) != nullptr;
    }
    if (container.is_undefined()) return false;  // jinja2's Undefined iterates as empty
    if (container.is_sequence()) {
        const Sequence& s = container.as_sequence();
        const size_t from = s.kind == SeqKind::Iterator ? s.consumed : 0;
        for (size_t i = from; i < s.items.size(); ++i) {
            int64_t work = 0;
            const bool found = py_equal(s.items[i], item, &work);
            ev.charge(work);
            if (s.kind == SeqKind::Iterator) s.consumed = i + 1;  // Python's `in` consumes a generator up to the match
            if (found) return true;
        }
        return false;
    }
    fail_type("argument of type '" + container.type_name() + "' is not iterable");
}

}  // namespace lorascope::chat
