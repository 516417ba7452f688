// The methods of str and dict that chat templates call (message.content.strip(), tool.items(),
// d.get('x')), with Python's semantics; and the names of every other attribute Python's types
// have, so that using one is refused rather than silently undefined.
#include "chat/evaluator.h"
#include "chat/objects.h"
#include "chat/py_text.h"
#include "chat/render_error.h"
#include "chat/value_text.h"

#include <algorithm>
#include <unordered_map>

namespace lorascope::chat {

namespace {

const Value kNone = Value::none();

const std::string& self_text(Evaluator& ev, const Value& self) {
    ev.charge_bytes(self.as_string().size());
    return self.as_string();
}

std::optional<std::string> optional_text(const Value& v, const char* method) {
    if (v.is_none()) return std::nullopt;
    if (!v.is_string()) fail_type(std::string(method) + " arg must be None or str");
    return v.as_string();
}

Value strings(Evaluator& ev, const std::vector<std::string>& parts) {
    std::vector<Value> out;
    for (const auto& p : parts) out.push_back(Value::string(p));
    return ev.make_sequence(std::move(out));
}

Value m_strip(Evaluator& ev, const Value& self, CallArgs& args, bool left, bool right, const char* name) {
    const auto a = bind_args(name, args, {{"chars", kNone}});
    return Value::string(py_strip(self_text(ev, self), optional_text(a[0], name), left, right));
}
Value m_strip(Evaluator& ev, const Value& self, CallArgs& args) { return m_strip(ev, self, args, true, true, "strip"); }
Value m_lstrip(Evaluator& ev, const Value& self, CallArgs& args) { return m_strip(ev, self, args, true, false, "lstrip"); }
Value m_rstrip(Evaluator& ev, const Value& self, CallArgs& args) { return m_strip(ev, self, args, false, true, "rstrip"); }

Value m_split(Evaluator& ev, const Value& self, CallArgs& args, bool from_right) {
    const auto a = bind_args(from_right ? "rsplit" : "split", args, {{"sep", kNone}, {"maxsplit", Value::integer(-1)}});
    const auto sep = optional_text(a[0], "split");
    if (sep && sep->empty()) fail_type("empty separator");
    if (!a[1].is_integral()) fail_type("'" + a[1].type_name() + "' object cannot be interpreted as an integer");
    const std::string& s = self_text(ev, self);
    return strings(ev, from_right ? py_rsplit(s, sep, a[1].as_int()) : py_split(s, sep, a[1].as_int()));
}
Value m_split(Evaluator& ev, const Value& self, CallArgs& args) { return m_split(ev, self, args, false); }
Value m_rsplit(Evaluator& ev, const Value& self, CallArgs& args) { return m_split(ev, self, args, true); }

Value m_splitlines(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("splitlines", args, {{"keepends", Value::boolean(false)}});
    if (a[0].truthy()) fail_unsupported("splitlines(keepends=True) is not supported");
    return strings(ev, py_splitlines(self_text(ev, self)));
}

// startswith / endswith with a str or a tuple of str (start and end positions are not supported).
Value m_affix(Evaluator& ev, const Value& self, CallArgs& args, bool at_start) {
    const auto a = bind_args(at_start ? "startswith" : "endswith", args, {{"prefix", std::nullopt}});
    const std::string& s = self_text(ev, self);
    std::vector<Value> candidates;
    if (a[0].is_sequence() && a[0].as_sequence().kind == SeqKind::Tuple) candidates = a[0].as_sequence().items;
    else candidates.push_back(a[0]);
    for (const Value& c : candidates) {
        if (!c.is_string())
            fail_type(std::string(at_start ? "startswith" : "endswith") + " first arg must be str or a tuple of str, not " + c.type_name());
        const std::string& x = c.as_string();
        if (x.size() <= s.size() && s.compare(at_start ? 0 : s.size() - x.size(), x.size(), x) == 0) return Value::boolean(true);
    }
    return Value::boolean(false);
}
Value m_startswith(Evaluator& ev, const Value& self, CallArgs& args) { return m_affix(ev, self, args, true); }
Value m_endswith(Evaluator& ev, const Value& self, CallArgs& args) { return m_affix(ev, self, args, false); }

const std::string& ascii_self(Evaluator& ev, const Value& self, const char* name) {
    const std::string& s = self_text(ev, self);
    if (!is_ascii(s)) fail_unsupported(std::string("str.") + name + "() of non-ASCII text is not supported (no Unicode case tables)");
    return s;
}
Value ascii_case(Evaluator& ev, const Value& self, CallArgs& args, const char* name, std::string (*fn)(std::string_view)) {
    bind_args(name, args, {});
    return Value::string(fn(ascii_self(ev, self, name)));
}
Value ascii_test(Evaluator& ev, const Value& self, CallArgs& args, const char* name, bool (*fn)(std::string_view)) {
    bind_args(name, args, {});
    return Value::boolean(fn(ascii_self(ev, self, name)));
}
Value m_upper(Evaluator& ev, const Value& self, CallArgs& args) { return ascii_case(ev, self, args, "upper", ascii_upper); }
Value m_lower(Evaluator& ev, const Value& self, CallArgs& args) { return ascii_case(ev, self, args, "lower", ascii_lower); }
Value m_title(Evaluator& ev, const Value& self, CallArgs& args) { return ascii_case(ev, self, args, "title", ascii_title); }
Value m_capitalize(Evaluator& ev, const Value& self, CallArgs& args) { return ascii_case(ev, self, args, "capitalize", ascii_capitalize); }
Value m_islower(Evaluator& ev, const Value& self, CallArgs& args) { return ascii_test(ev, self, args, "islower", ascii_islower); }
Value m_isupper(Evaluator& ev, const Value& self, CallArgs& args) { return ascii_test(ev, self, args, "isupper", ascii_isupper); }

Value m_isspace(Evaluator& ev, const Value& self, CallArgs& args) {
    bind_args("isspace", args, {});
    const auto cps = code_points(self_text(ev, self));
    return Value::boolean(!cps.empty() && std::all_of(cps.begin(), cps.end(), py_isspace));
}

Value m_replace(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("replace", args, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::integer(-1)}});
    if (!a[0].is_string() || !a[1].is_string()) fail_type("replace() arguments must be str");
    if (!a[2].is_integral()) fail_type("'" + a[2].type_name() + "' object cannot be interpreted as an integer");
    std::string out = py_replace(self_text(ev, self), a[0].as_string(), a[1].as_string(), a[2].as_int());
    ev.charge_bytes(out.size());
    ev.check_string(out);
    return Value::string(std::move(out));
}

const std::string& needle(const Value& v, const char* method) {
    if (!v.is_string()) fail_type(std::string(method) + "() argument must be str, not " + v.type_name());
    return v.as_string();
}
Value m_find(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("find", args, {{"sub", std::nullopt}});
    return Value::integer(py_find(self_text(ev, self), needle(a[0], "find"), false));
}
Value m_rfind(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("rfind", args, {{"sub", std::nullopt}});
    return Value::integer(py_find(self_text(ev, self), needle(a[0], "rfind"), true));
}
Value m_count(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("count", args, {{"sub", std::nullopt}});
    return Value::integer(py_count(self_text(ev, self), needle(a[0], "count")));
}

Value m_removeaffix(Evaluator& ev, const Value& self, CallArgs& args, bool prefix) {
    const auto a = bind_args(prefix ? "removeprefix" : "removesuffix", args, {{"affix", std::nullopt}});
    const std::string& s = self_text(ev, self);
    const std::string& x = needle(a[0], prefix ? "removeprefix" : "removesuffix");
    if (x.size() > s.size() || s.compare(prefix ? 0 : s.size() - x.size(), x.size(), x) != 0) return self;
    return Value::string(prefix ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
}
Value m_removeprefix(Evaluator& ev, const Value& self, CallArgs& args) { return m_removeaffix(ev, self, args, true); }
Value m_removesuffix(Evaluator& ev, const Value& self, CallArgs& args) { return m_removeaffix(ev, self, args, false); }

Value m_join(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("join", args, {{"iterable", std::nullopt}});
    std::string out;
    bool first = true;
    for (const Value& item : ev.iterate(a[0])) {
        if (!item.is_string()) fail_type("sequence item: expected str instance, " + item.type_name() + " found");
        if (!first) out += self.as_string();
        first = false;
        out += item.as_string();
        ev.check_string(out);
    }
    ev.charge_bytes(out.size());
    return Value::string(std::move(out));
}

// ---- dict ----

Value dict_view(Evaluator& ev, const Value& self, CallArgs& args, SeqKind kind, const char* name) {
    bind_args(name, args, {});
    std::vector<Value> items;
    for (const auto& [key, value] : self.as_dict().items) {
        if (kind == SeqKind::DictKeys) items.push_back(key);
        else if (kind == SeqKind::DictValues) items.push_back(value);
        else items.push_back(ev.make_sequence({key, value}, SeqKind::Tuple));
    }
    return ev.make_sequence(std::move(items), kind);
}
Value m_items(Evaluator& ev, const Value& self, CallArgs& args) { return dict_view(ev, self, args, SeqKind::DictItems, "items"); }
Value m_keys(Evaluator& ev, const Value& self, CallArgs& args) { return dict_view(ev, self, args, SeqKind::DictKeys, "keys"); }
Value m_values(Evaluator& ev, const Value& self, CallArgs& args) { return dict_view(ev, self, args, SeqKind::DictValues, "values"); }

Value m_get(Evaluator& ev, const Value& self, CallArgs& args) {
    const auto a = bind_args("get", args, {{"key", std::nullopt}, {"default", kNone}});
    if (!hashable(a[0])) fail_type("unhashable type: '" + a[0].type_name() + "'");
    ev.charge(1);
    const Value* v = self.as_dict().find(a[0]);
    return v ? *v : a[1];
}

Value m_copy(Evaluator&, const Value& self, CallArgs& args) {
    bind_args("copy", args, {});
    return self;  // values are immutable: a copy is the same value
}

const char* const kStrAttributes[] = {
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format", "format_map",
    "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
    "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans", "partition",
    "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split",
    "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper", "zfill"};
const char* const kDictAttributes[] = {"clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values"};
const char* const kListAttributes[] = {"append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove", "reverse", "sort"};
const char* const kNumberAttributes[] = {"as_integer_ratio", "bit_count", "bit_length", "conjugate", "denominator", "from_bytes",
                                         "imag", "numerator", "real", "to_bytes", "fromhex", "hex", "is_integer"};
const char* const kOtherAttributes[] = {"start", "stop", "step", "mapping", "isdisjoint", "send", "throw", "close"};

template <size_t N>
bool in(const char* const (&names)[N], const std::string& name) {
    return std::any_of(names, names + N, [&](const char* n) { return name == n; });
}

}  // namespace

MethodFn find_string_method(const std::string& name) {
    static const std::unordered_map<std::string, MethodFn> kMethods = {
        {"strip", m_strip}, {"lstrip", m_lstrip}, {"rstrip", m_rstrip}, {"split", m_split}, {"rsplit", m_rsplit},
        {"splitlines", m_splitlines}, {"startswith", m_startswith}, {"endswith", m_endswith}, {"upper", m_upper},
        {"lower", m_lower}, {"title", m_title}, {"capitalize", m_capitalize}, {"islower", m_islower},
        {"isupper", m_isupper}, {"isspace", m_isspace}, {"replace", m_replace}, {"find", m_find}, {"rfind", m_rfind},
        {"count", m_count}, {"removeprefix", m_removeprefix}, {"removesuffix", m_removesuffix}, {"join", m_join},
    };
    const auto it = kMethods.find(name);
    return it == kMethods.end() ? nullptr : it->second;
}

MethodFn find_dict_method(const std::string& name) {
    static const std::unordered_map<std::string, MethodFn> kMethods = {
        {"items", m_items}, {"keys", m_keys}, {"values", m_values}, {"get", m_get}, {"copy", m_copy},
    };
    const auto it = kMethods.find(name);
    return it == kMethods.end() ? nullptr : it->second;
}

bool python_has_attribute(const Value& value, const std::string& name) {
    switch (value.type()) {
        case Value::Type::String: return in(kStrAttributes, name);
        case Value::Type::Dict: return in(kDictAttributes, name);
        case Value::Type::Sequence: return in(kListAttributes, name) || in(kOtherAttributes, name);
        case Value::Type::Bool:
        case Value::Type::Int:
        case Value::Type::Float: return in(kNumberAttributes, name);
        default: return false;
    }
}

}  // namespace lorascope::chat
