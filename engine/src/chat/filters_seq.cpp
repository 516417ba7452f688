// jinja2's filters on sequences and mappings: length, first, last, list, join, items, reverse,
// sort, sum, unique, min, max, and the generators map, select, reject, selectattr, rejectattr
// (which, as in jinja2, can be iterated once and have no length).
#include "chat/builtins.h"
#include "chat/evaluator.h"
#include "chat/operators.h"
#include "chat/py_text.h"
#include "chat/render_error.h"
#include "chat/value_text.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace lorascope::chat {

namespace {

const Value kNone = Value::none();

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0, each as environment.getitem.
std::function<Value(const Value&)> attribute_getter(Evaluator& ev, const Value& attribute, const Value& fallback = Value::none()) {
    std::vector<Value> parts;
    if (attribute.is_string()) {
        for (const std::string& part : py_split(attribute.as_string(), std::string("."), -1)) {
            const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
            parts.push_back(digits && part.size() < 18 ? Value::integer(std::stoll(part)) : Value::string(part));
        }
    } else {
        parts.push_back(attribute);
    }
    return [&ev, parts, fallback](const Value& item) {
        Value v = item;
        for (const Value& part : parts) {
            v = ev.getitem(v, part);
            if (!fallback.is_none() && v.is_undefined()) v = fallback;
        }
        return v;
    };
}

Value lower_if_text(const Value& v) {
    if (!v.is_string()) return v;
    if (!is_ascii(v.as_string())) fail_unsupported("case-insensitive comparison of non-ASCII text is not supported");
    return Value::string(ascii_lower(v.as_string()));
}

Value f_length(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("length", args, {});
    switch (v.type()) {
        case Value::Type::Undefined: return Value::integer(0);
        case Value::Type::String: ev.charge_bytes(v.as_string().size()); return Value::integer(code_point_count(v.as_string()));
        case Value::Type::Dict: return Value::integer(static_cast<int64_t>(v.as_dict().items.size()));
        case Value::Type::Sequence:
            if (v.as_sequence().kind != SeqKind::Iterator) return Value::integer(static_cast<int64_t>(v.as_sequence().items.size()));
            break;
        default: break;
    }
    fail_type("object of type '" + v.type_name() + "' has no len()");
}

Value f_first(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("first", args, {});
    if (v.is_sequence() && v.as_sequence().kind == SeqKind::Iterator) {
        const Sequence& s = v.as_sequence();
        if (s.consumed < s.items.size()) return s.items[s.consumed++];
    } else {
        const auto items = ev.iterate(v);
        if (!items.empty()) return items.front();
    }
    return Value::undefined("No first item, sequence was empty.");
}

Value f_last(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("last", args, {});
    if (v.is_sequence() && v.as_sequence().kind == SeqKind::Iterator) fail_type("'generator' object is not reversible");
    if (!(v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict())) fail_type("'" + v.type_name() + "' object is not reversible");
    const auto items = ev.iterate(v);
    if (!items.empty()) return items.back();
    return Value::undefined("No last item, sequence was empty.");
}

Value f_list(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("list", args, {});
    return ev.make_sequence(ev.iterate(v));
}

Value f_join(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("join", args, {{"d", Value::string("")}, {"attribute", kNone}});
    std::vector<Value> items = ev.iterate(v);
    if (!a[1].is_none()) {
        const auto get = attribute_getter(ev, a[1]);
        for (Value& item : items) item = get(item);
    }
    const std::string separator = py_str(a[0]);
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += separator;
        out += py_str(items[i]);
        ev.check_string(out);
    }
    ev.charge_bytes(out.size());
    return Value::string(std::move(out));
}

Value f_items(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("items", args, {});
    if (v.is_undefined()) return ev.make_sequence({}, SeqKind::Iterator);
    if (!v.is_dict()) fail_type("Can only get item pairs from a mapping.");
    std::vector<Value> pairs;
    for (const auto& [key, value] : v.as_dict().items) pairs.push_back(ev.make_sequence({key, value}, SeqKind::Tuple));
    return ev.make_sequence(std::move(pairs), SeqKind::Iterator);
}

Value f_reverse(Evaluator& ev, const Value& v, CallArgs& args) {
    bind_args("reverse", args, {});
    std::vector<Value> items = ev.iterate(v);
    std::reverse(items.begin(), items.end());
    if (v.is_string()) {
        std::string out;
        for (const Value& c : items) out += c.as_string();
        return Value::string(std::move(out));
    }
    // reversed() of a generator fails; jinja2 then makes a list of it.
    const bool was_iterator = v.is_sequence() && v.as_sequence().kind == SeqKind::Iterator;
    return ev.make_sequence(std::move(items), was_iterator ? SeqKind::List : SeqKind::Iterator);
}

// map('filter', args...) or map(attribute='x', default=...): a generator.
Value f_map(Evaluator& ev, const Value& v, CallArgs& args) {
    std::vector<Value> items = ev.iterate(v);
    std::vector<Value> out;
    if (args.positional.empty()) {
        Value attribute, fallback = Value::none();
        for (auto& [name, value] : args.keywords) {
            if (name == "attribute") attribute = value;
            else if (name == "default") fallback = value;
            else fail_type("Unexpected keyword argument '" + name + "'");
        }
        if (attribute.is_undefined()) fail_type("map requires a filter argument");
        const auto get = attribute_getter(ev, attribute, fallback);
        for (const Value& item : items) out.push_back(get(item));
    } else {
        const std::string name = py_str(args.positional[0]);
        const FilterFn filter = find_filter(name);
        if (!filter) fail_unsupported(jinja_has_filter(name) ? "the filter '" + name + "' is not supported" : "no filter named '" + name + "'");
        for (const Value& item : items) {
            CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keywords};
            out.push_back(filter(ev, item, rest));
        }
    }
    return ev.make_sequence(std::move(out), SeqKind::Iterator);
}

// select / reject (by a test or truthiness), selectattr / rejectattr (of an attribute).
Value select_or_reject(Evaluator& ev, const Value& v, CallArgs& args, bool by_attribute, bool keep_when) {
    const size_t off = by_attribute ? 1 : 0;
    if (by_attribute && args.positional.empty()) fail_type("Missing parameter for attribute name");
    std::function<Value(const Value&)> transform = [](const Value& x) { return x; };
    if (by_attribute) transform = attribute_getter(ev, args.positional[0]);
    TestFn test = nullptr;
    if (args.positional.size() > off) {
        const std::string name = py_str(args.positional[off]);
        test = find_test(name);
        if (!test) fail_unsupported(jinja_has_test(name) ? "the test '" + name + "' is not supported" : "no test named '" + name + "'");
    }
    std::vector<Value> out;
    for (const Value& item : ev.iterate(v)) {
        const Value subject = transform(item);
        bool passes;
        if (test) {
            CallArgs rest{{args.positional.begin() + static_cast<std::ptrdiff_t>(off) + 1, args.positional.end()}, args.keywords};
            passes = test(ev, subject, rest);
        } else {
            passes = subject.truthy();
        }
        if (passes == keep_when) out.push_back(item);
    }
    return ev.make_sequence(std::move(out), SeqKind::Iterator);
}

Value f_select(Evaluator& ev, const Value& v, CallArgs& args) { return select_or_reject(ev, v, args, false, true); }
Value f_reject(Evaluator& ev, const Value& v, CallArgs& args) { return select_or_reject(ev, v, args, false, false); }
Value f_selectattr(Evaluator& ev, const Value& v, CallArgs& args) { return select_or_reject(ev, v, args, true, true); }
Value f_rejectattr(Evaluator& ev, const Value& v, CallArgs& args) { return select_or_reject(ev, v, args, true, false); }

// The key function of sort, unique, min and max: the attribute, lower-cased unless case_sensitive.
std::function<Value(const Value&)> sort_key(Evaluator& ev, const Value& case_sensitive, const Value& attribute) {
    std::function<Value(const Value&)> get = [](const Value& x) { return x; };
    if (!attribute.is_none()) get = attribute_getter(ev, attribute);
    if (case_sensitive.truthy()) return get;
    return [get](const Value& x) { return lower_if_text(get(x)); };
}

Value f_sort(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("sort", args, {{"reverse", Value::boolean(false)}, {"case_sensitive", Value::boolean(false)}, {"attribute", kNone}});
    std::vector<Value> items = ev.iterate(v);
    const auto key = sort_key(ev, a[1], a[2]);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) keyed.emplace_back(key(item), std::move(item));
    const bool reverse = a[0].truthy();
    ev.charge(static_cast<int64_t>(keyed.size()) * 20);
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? ordered(ev, ast::CompareOp::Less, y.first, x.first) : ordered(ev, ast::CompareOp::Less, x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& k : keyed) out.push_back(std::move(k.second));
    return ev.make_sequence(std::move(out));
}

Value f_unique(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("unique", args, {{"case_sensitive", Value::boolean(false)}, {"attribute", kNone}});
    const auto key = sort_key(ev, a[0], a[1]);
    std::vector<Value> seen, out;
    for (const Value& item : ev.iterate(v)) {
        const Value k = key(item);
        if (!hashable(k)) fail_type("unhashable type: '" + k.type_name() + "'");
        const bool again = std::any_of(seen.begin(), seen.end(), [&](const Value& s) {
            ev.charge(1);
            return py_equal(s, k);
        });
        if (!again) {
            seen.push_back(k);
            out.push_back(item);
        }
    }
    return ev.make_sequence(std::move(out), SeqKind::Iterator);
}

Value min_or_max(Evaluator& ev, const Value& v, CallArgs& args, bool want_max) {
    const auto a = bind_args(want_max ? "max" : "min", args, {{"case_sensitive", Value::boolean(false)}, {"attribute", kNone}});
    const std::vector<Value> items = ev.iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    const auto key = sort_key(ev, a[0], a[1]);
    size_t best = 0;
    Value best_key = key(items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
        Value k = key(items[i]);
        if (ordered(ev, want_max ? ast::CompareOp::Greater : ast::CompareOp::Less, k, best_key)) {
            best = i;
            best_key = std::move(k);
        }
    }
    return items[best];
}

Value f_min(Evaluator& ev, const Value& v, CallArgs& args) { return min_or_max(ev, v, args, false); }
Value f_max(Evaluator& ev, const Value& v, CallArgs& args) { return min_or_max(ev, v, args, true); }

Value f_sum(Evaluator& ev, const Value& v, CallArgs& args) {
    const auto a = bind_args("sum", args, {{"attribute", kNone}, {"start", Value::integer(0)}});
    if (a[1].is_string()) fail_type("sum() can't sum strings [use ''.join(seq) instead]");
    std::vector<Value> items = ev.iterate(v);
    if (!a[0].is_none()) {
        const auto get = attribute_getter(ev, a[0]);
        for (Value& item : items) item = get(item);
    }
    Value total = a[1];
    for (const Value& item : items) total = binary_op(ev, ast::BinaryOp::Add, total, item);
    return total;
}

}  // namespace

FilterFn find_sequence_filter(const std::string& name) {
    static const std::unordered_map<std::string, FilterFn> kFilters = {
        {"length", f_length}, {"count", f_length}, {"first", f_first}, {"last", f_last}, {"list", f_list},
        {"join", f_join}, {"items", f_items}, {"reverse", f_reverse}, {"map", f_map}, {"select", f_select},
        {"reject", f_reject}, {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr}, {"sort", f_sort},
        {"unique", f_unique}, {"min", f_min}, {"max", f_max}, {"sum", f_sum},
    };
    const auto it = kFilters.find(name);
    return it == kFilters.end() ? nullptr : it->second;
}

}  // namespace lorascope::chat
