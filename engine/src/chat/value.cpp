#include "chat/value.h"

#include <algorithm>

namespace lorascope::chat {

namespace {

void note_child(const Value& child, int& depth, bool& holds_objects) {
    depth = std::max(depth, child.depth() + 1);
    holds_objects = holds_objects || child.holds_objects();
}

bool numeric_equal(const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    // long double holds every int64 exactly (x86's 64-bit mantissa), as Python compares int/float.
    const long double x = a.is_float() ? static_cast<long double>(a.as_double()) : static_cast<long double>(a.as_int());
    const long double y = b.is_float() ? static_cast<long double>(b.as_double()) : static_cast<long double>(b.as_int());
    return x == y;
}

bool contains_equal(const std::vector<Value>& items, const Value& v, int64_t* work) {
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return py_equal(x, v, work); });
}

bool sequences_equal(const Sequence& x, const Sequence& y, int64_t* work) {
    const bool set_like = x.kind == SeqKind::DictKeys || x.kind == SeqKind::DictItems;
    const bool plain = x.kind == SeqKind::List || x.kind == SeqKind::Tuple || x.kind == SeqKind::Range;
    if (x.kind != y.kind || !(plain || set_like)) return &x == &y;
    if (x.items.size() != y.items.size()) return false;
    if (set_like) {
        for (const Value& v : x.items)
            if (!contains_equal(y.items, v, work)) return false;
        return true;
    }
    for (size_t i = 0; i < x.items.size(); ++i)
        if (!py_equal(x.items[i], y.items[i], work)) return false;
    return true;
}

bool dicts_equal(const Dict& x, const Dict& y, int64_t* work) {
    if (x.items.size() != y.items.size()) return false;
    for (const auto& [key, value] : x.items) {
        const Value* other = y.find(key);
        if (work) ++*work;
        if (!other || !py_equal(value, *other, work)) return false;
    }
    return true;
}

}  // namespace

const Value* Dict::find(const Value& key) const {
    if (key.is_string()) {
        const auto it = string_keys.find(key.as_string());
        return it == string_keys.end() ? nullptr : &items[it->second].second;
    }
    for (const auto& [k, v] : items)
        if (!k.is_string() && py_equal(k, key)) return &v;
    return nullptr;
}

Value Value::undefined(const std::string& name) {
    return Value(Data(Undefined{std::make_shared<const std::string>(name)}));
}

Value Value::string(std::string s) { return Value(Data(std::make_shared<const std::string>(std::move(s)))); }

Value Value::sequence(std::vector<Value> items, SeqKind kind) {
    auto seq = std::make_shared<Sequence>();
    seq->kind = kind;
    for (const Value& v : items) note_child(v, seq->depth, seq->holds_objects);
    seq->items = std::move(items);
    return Value(Data(SequenceRef(std::move(seq))));
}

Value Value::range(int64_t start, int64_t stop, int64_t step, std::vector<Value> items) {
    auto seq = std::make_shared<Sequence>();
    seq->kind = SeqKind::Range;
    seq->items = std::move(items);
    seq->range_start = start;
    seq->range_stop = stop;
    seq->range_step = step;
    return Value(Data(SequenceRef(std::move(seq))));
}

Value Value::dict(std::vector<std::pair<Value, Value>> items) {
    auto d = std::make_shared<Dict>();
    for (size_t i = 0; i < items.size(); ++i) {
        note_child(items[i].first, d->depth, d->holds_objects);
        note_child(items[i].second, d->depth, d->holds_objects);
        if (items[i].first.is_string()) d->string_keys.emplace(items[i].first.as_string(), i);
    }
    d->items = std::move(items);
    return Value(Data(DictRef(std::move(d))));
}

Value Value::object(std::shared_ptr<Object> object) { return Value(Data(ObjectRef(std::move(object)))); }

bool Value::is_list_or_tuple() const {
    if (!is_sequence()) return false;
    const SeqKind k = as_sequence().kind;
    return k == SeqKind::List || k == SeqKind::Tuple;
}

int64_t Value::as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(data_); }

double Value::as_double() const { return is_float() ? std::get<double>(data_) : static_cast<double>(as_int()); }

const std::string& Value::undefined_name() const {
    static const std::string empty;
    const auto& name = std::get<Undefined>(data_).name;
    return name ? *name : empty;
}

int Value::depth() const {
    if (is_sequence()) return as_sequence().depth;
    if (is_dict()) return as_dict().depth;
    return 0;
}

bool Value::holds_objects() const {
    if (is_object()) return true;
    if (is_sequence()) return as_sequence().holds_objects;
    if (is_dict()) return as_dict().holds_objects;
    return false;
}

bool Value::truthy() const {
    switch (type()) {
        case Type::Undefined:
        case Type::None: return false;
        case Type::Bool: return as_bool();
        case Type::Int: return as_int() != 0;
        case Type::Float: return as_double() != 0.0;
        case Type::String: return !as_string().empty();
        case Type::Sequence: {
            const Sequence& s = as_sequence();
            // An iterator is an object without __len__: always true, even when exhausted.
            return s.kind == SeqKind::Iterator || !s.items.empty();
        }
        case Type::Dict: return !as_dict().items.empty();
        case Type::Object: return true;
    }
    return false;
}

std::string Value::type_name() const {
    switch (type()) {
        case Type::Undefined: return "Undefined";
        case Type::None: return "NoneType";
        case Type::Bool: return "bool";
        case Type::Int: return "int";
        case Type::Float: return "float";
        case Type::String: return "str";
        case Type::Sequence:
            switch (as_sequence().kind) {
                case SeqKind::List: return "list";
                case SeqKind::Tuple: return "tuple";
                case SeqKind::Iterator: return "generator";
                case SeqKind::DictItems: return "dict_items";
                case SeqKind::DictKeys: return "dict_keys";
                case SeqKind::DictValues: return "dict_values";
                case SeqKind::Range: return "range";
            }
            break;
        case Type::Dict: return "dict";
        case Type::Object: return as_object().type_name();
    }
    return "object";
}

bool py_equal(const Value& a, const Value& b, int64_t* work) {
    if (work) ++*work;
    if (a.is_number() && b.is_number()) return numeric_equal(a, b);
    if (a.type() != b.type()) return false;
    switch (a.type()) {
        case Value::Type::Undefined:
        case Value::Type::None: return true;
        case Value::Type::String: return a.as_string() == b.as_string();
        case Value::Type::Sequence: return sequences_equal(a.as_sequence(), b.as_sequence(), work);
        case Value::Type::Dict: return dicts_equal(a.as_dict(), b.as_dict(), work);
        case Value::Type::Object: return &a.as_object() == &b.as_object();
        default: return false;
    }
}

bool hashable(const Value& v) {
    switch (v.type()) {
        case Value::Type::None:
        case Value::Type::Bool:
        case Value::Type::Int:
        case Value::Type::Float:
        case Value::Type::String: return true;
        case Value::Type::Sequence: {
            const Sequence& s = v.as_sequence();
            if (s.kind == SeqKind::Range) return true;
            if (s.kind != SeqKind::Tuple) return s.kind == SeqKind::Iterator;
            return std::all_of(s.items.begin(), s.items.end(), [](const Value& x) { return hashable(x); });
        }
        case Value::Type::Object:
        case Value::Type::Undefined: return true;  // jinja2's Undefined defines __hash__
        default: return false;                     // list, dict
    }
}

}  // namespace lorascope::chat
