// jinja2's filters on single values: text (trim, upper, replace, indent, ...), numbers (int, float,
// round, abs), default, string, safe, attr, and transformers' tojson.
#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/objects.h"
#include "chat/operators.h"
#include "chat/py_text.h"
#include "chat/render_error.h"
#include "chat/value_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace lorascope::chat {

namespace {

const Value kNone = Value::none();

std::string text_of(Evaluator& ev, const Value& v) {
    std::string s = py_str(v);
    ev.charge_bytes(s.size());
    return s;
}

std::string ascii_only(const std::string& s, const char* what) {
    if (!is_ascii(s)) fail_unsupported(std::string(what) + " of non-ASCII text is not supported (no Unicode case tables)");
    return s;
}

Value f_trim(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("trim", args, {{"chars", kNone}});
    std::optional<std::string> chars;
    if (!a[0].is_none()) chars = py_str(a[0]);
    return Value::string(py_strip(text_of(ev, v), chars, true, true));
}

Value f_upper(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("upper", args, {});
    return Value::string(ascii_upper(ascii_only(text_of(ev, v), "upper")));
}

Value f_lower(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("lower", args, {});
    return Value::string(ascii_lower(ascii_only(text_of(ev, v), "lower")));
}

Value f_capitalize(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("capitalize", args, {});
    return Value::string(ascii_capitalize(ascii_only(text_of(ev, v), "capitalize")));
}

// jinja2's title splits before runs of [-\s({[<] and capitalises each piece.
Value f_title(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("title", args, {});
    const std::string s = ascii_only(text_of(ev, v), "title");
    std::string out;
    bool piece_start = true;
    bool in_separator = false;
    for (char c : s) {
        const bool separator = std::strchr("-({[<", c) != nullptr || py_isspace(static_cast<unsigned char>(c));
        if (separator != in_separator) piece_start = true;
        in_separator = separator;
        out += piece_start ? ascii_upper(std::string(1, c)) : ascii_lower(std::string(1, c));
        piece_start = false;
    }
    return Value::string(out);
}

Value f_replace(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("replace", args, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", kNone}});
    if (!a[2].is_none() && !a[2].is_integral()) fail_type("'" + a[2].type_name() + "' object cannot be interpreted as an integer");
    std::string out = py_replace(text_of(ev, v), py_str(a[0]), py_str(a[1]), a[2].is_none() ? -1 : a[2].as_int());
    ev.charge_bytes(out.size());
    ev.check_string(out);
    return Value::string(std::move(out));
}

Value f_string(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("string", args, {});
    return Value::string(text_of(ev, v));
}

Value f_safe(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("safe", args, {});
    return Value::string(text_of(ev, v));
}

Value f_default(Evaluator&, const Value& v, CallArgs& args) {
    const auto a = bind_args("default", args, {{"default_value", Value::string("")}, {"boolean", Value::boolean(false)}});
    if (v.is_undefined() || (a[1].truthy() && !v.truthy())) return a[0];
    return v;
}

// jinja2's indent: lines after the first (and the first with first=True) get the indentation;
// blank lines only with blank=True. splitlines() decides what a line is.
Value f_indent(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("indent", args, {{"width", Value::integer(4)}, {"first", Value::boolean(false)}, {"blank", Value::boolean(false)}});
    std::string indentation;
    if (a[0].is_string()) indentation = a[0].as_string();
    else if (a[0].is_integral()) indentation = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(a[0].as_int(), 4096))), ' ');
    else fail_type("can't multiply sequence by non-int of type '" + a[0].type_name() + "'");
    const std::string s = text_of(ev, v) + "\n";
    std::vector<std::string> lines = py_splitlines(s);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i == 0) {
            out = lines[0];
            continue;
        }
        out += "\n";
        if (a[2].truthy() || !lines[i].empty()) out += indentation;
        out += lines[i];
        ev.check_string(out);
    }
    if (a[1].truthy()) out = indentation + out;
    ev.charge_bytes(out.size());
    return Value::string(std::move(out));
}

// Python's float() of a str: optional spaces, sign, digits with single underscores, inf/nan.
std::optional<double> parse_float(const std::string& text) {
    std::string s = py_strip(text, std::nullopt, true, true);
    std::string cleaned;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_') {
            const bool between = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                                 std::isdigit(static_cast<unsigned char>(s[i + 1]));
            if (!between) return std::nullopt;
            continue;
        }
        cleaned += s[i];
    }
    const std::string lower = ascii_lower(cleaned);
    const std::string bare = (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) ? lower.substr(1) : lower;
    const double sign = (!lower.empty() && lower[0] == '-') ? -1.0 : 1.0;
    if (bare == "inf" || bare == "infinity") return sign * INFINITY;
    if (bare == "nan") return NAN;
    if (bare.empty() || !(std::isdigit(static_cast<unsigned char>(bare[0])) || bare[0] == '.')) return std::nullopt;
    double value = 0;
    const auto r = std::from_chars(bare.data(), bare.data() + bare.size(), value);
    if (r.ec != std::errc() || r.ptr != bare.data() + bare.size()) return std::nullopt;
    return sign * value;
}

Value f_float(Evaluator&, const Value& v, CallArgs& args) {
    const auto a = bind_args("float", args, {{"default", Value::number(0.0)}});
    if (v.is_number()) return Value::number(v.as_double());
    if (v.is_string())
        if (auto f = parse_float(v.as_string())) return Value::number(*f);
    return a[0];
}

// Python's int(str, base): spaces, a sign, single underscores between digits, and for base 16/8/2
// the matching 0x/0o/0b prefix. A value beyond 64 bits is refused (Python's int has no limit).
std::optional<int64_t> parse_int(const std::string& text, int base) {
    std::string s = py_strip(text, std::nullopt, true, true);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.erase(0, 1);
    }
    const char prefix = base == 16 ? 'x' : base == 8 ? 'o' : base == 2 ? 'b' : 0;
    if (prefix && s.size() > 2 && s[0] == '0' && (s[1] == prefix || s[1] == prefix - 32)) s.erase(0, s[2] == '_' ? 3 : 2);
    std::string digits;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_' && i > 0 && i + 1 < s.size() && s[i - 1] != '_') continue;
        digits += s[i];
    }
    if (digits.empty()) return std::nullopt;
    uint64_t value = 0;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (r.ptr != digits.data() + digits.size()) return std::nullopt;
    if (r.ec == std::errc::result_out_of_range || value > static_cast<uint64_t>(INT64_MAX))
        fail_unsupported("integers beyond 64 bits are not supported");
    return negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
}

// int(float) truncates; beyond 64 bits Python still gives an int, which is refused here.
Value float_to_int(double f, const Value& fallback) {
    if (!std::isfinite(f)) return fallback;  // int(inf) raises OverflowError, int(nan) ValueError: jinja2's default
    if (std::fabs(f) >= 9.2233720368547758e18) fail_unsupported("integers beyond 64 bits are not supported");
    return Value::integer(static_cast<int64_t>(f));
}

Value f_int(Evaluator&, const Value& v, CallArgs& args) {
    const auto a = bind_args("int", args, {{"default", Value::integer(0)}, {"base", Value::integer(10)}});
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) return float_to_int(v.as_double(), a[0]);
    if (v.is_string()) {
        const int base = a[1].is_integral() ? static_cast<int>(a[1].as_int()) : 10;
        if (base != 10 && base != 2 && base != 8 && base != 16) fail_unsupported("the int filter with base " + std::to_string(base) + " is not supported");
        if (auto i = parse_int(v.as_string(), base)) return Value::integer(*i);
        // jinja2's quirk: "42.23"|int is 42, through float.
        if (auto f = parse_float(v.as_string())) return float_to_int(*f, a[0]);
    }
    return a[0];
}

Value f_abs(Evaluator&, const Value& v, CallArgs& args) {
    bind_args("abs", args, {});
    if (v.is_float()) return Value::number(std::fabs(v.as_double()));
    if (v.is_integral()) return v.as_int() < 0 ? negate(v) : Value::integer(v.as_int());
    if (v.is_undefined()) fail_undefined(v);
    fail_type("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Evaluator&, const Value& v, CallArgs& args) {
    const auto a = bind_args("round", args, {{"precision", Value::integer(0)}, {"method", Value::string("common")}});
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_number()) fail_type("type " + v.type_name() + " doesn't define __round__ method");
    if (!a[0].is_integral() || a[0].as_int() < 0 || a[0].as_int() > 20) fail_unsupported("round() precision outside 0..20 is not supported");
    const int precision = static_cast<int>(a[0].as_int());
    const std::string method = py_str(a[1]);
    if (method != "common" && method != "ceil" && method != "floor") fail_type("method must be common, ceil or floor");
    const double scale = std::pow(10.0, precision);
    if (method == "ceil") return Value::number(std::ceil(v.as_double() * scale) / scale);
    if (method == "floor") return Value::number(std::floor(v.as_double() * scale) / scale);
    if (v.is_integral()) return Value::integer(v.as_int());  // int.__round__ returns the int
    // printf rounds the exact binary value correctly, half to even: what Python's round() does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v.as_double());
    double rounded = 0;
    std::from_chars(buf, buf + std::strlen(buf), rounded);
    return Value::number(rounded);
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("tojson", args, {{"ensure_ascii", Value::boolean(false)}, {"indent", kNone},
                                              {"separators", kNone}, {"sort_keys", Value::boolean(false)}});
    JsonOptions o;
    o.ensure_ascii = a[0].truthy();
    if (a[1].is_string()) o.indent = a[1].as_string();
    else if (a[1].is_integral()) o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(a[1].as_int(), 4096))), ' ');
    else if (!a[1].is_none()) fail_type("can't multiply sequence by non-int of type '" + a[1].type_name() + "'");
    if (!a[2].is_none()) {
        const auto parts = ev.iterate(a[2]);
        if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string()) fail_type("separators must be two strings");
        o.item_separator = parts[0].as_string();
        o.key_separator = parts[1].as_string();
    }
    o.sort_keys = a[3].truthy();
    std::string out = py_json_dumps(v, o);
    ev.charge_bytes(out.size());
    ev.check_string(out);
    return Value::string(std::move(out));
}

// jinja2's attr: the attribute only, never a dict's item.
Value f_attr(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("attr", args, {{"name", std::nullopt}});
    const std::string name = py_str(a[0]);
    if (v.is_dict() && !find_dict_method(name) && !python_has_attribute(v, name))
        return Value::undefined("'dict object' has no attribute '" + name + "'");
    return ev.getattr(v, name);
}

}  // namespace

FilterFn find_text_filter(const std::string& name) {
    static const std::unordered_map<std::string, FilterFn> kFilters = {
        {"trim", f_trim}, {"upper", f_upper}, {"lower", f_lower}, {"capitalize", f_capitalize},
        {"title", f_title}, {"replace", f_replace}, {"string", f_string}, {"safe", f_safe},
        {"default", f_default}, {"d", f_default}, {"indent", f_indent}, {"float", f_float},
        {"int", f_int}, {"abs", f_abs}, {"round", f_round}, {"tojson", f_tojson}, {"attr", f_attr},
    };
    const auto it = kFilters.find(name);
    return it == kFilters.end() ? nullptr : it->second;
}

}  // namespace lorascope::chat
