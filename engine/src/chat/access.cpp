// Attribute and item access and iteration, as jinja2's sandboxed environment does them: `a.b`
// tries the attribute then the item, `a[b]` the item then the attribute; a missing one is
// undefined; attributes starting with '_' and methods that would change a value are refused.
#include "chat/evaluator.h"
#include "chat/objects.h"
#include "chat/operators.h"
#include "chat/py_text.h"
#include "chat/render_error.h"
#include "chat/value_text.h"

namespace lorascope::chat {

namespace {

Value missing_attribute(const Value& object, const std::string& name) {
    return Value::undefined("'" + object.type_name() + " object' has no attribute '" + name + "'");
}

Value bound(const Value& self, MethodFn fn) { return Value::object(std::make_shared<BoundMethod>(self, fn)); }

// A Python attribute of str or dict that names a method: bound if implemented, refused if not.
std::optional<Value> method_attribute(const Value& object, const std::string& name) {
    MethodFn fn = object.is_string() ? find_string_method(name) : object.is_dict() ? find_dict_method(name) : nullptr;
    if (fn) return bound(object, fn);
    if (python_has_attribute(object, name))
        fail_unsupported("the " + object.type_name() + " method or attribute '" + name + "' is not supported");
    return std::nullopt;
}

// Python's index into a sequence of `length`: the position, or -1 when out of range.
int64_t index_in(int64_t index, int64_t length) {
    if (index < 0) index += length;
    return (index < 0 || index >= length) ? -1 : index;
}

}  // namespace

Value Evaluator::getattr(const Value& object, const std::string& name) {
    if (object.is_undefined()) fail_undefined(object);
    if (!name.empty() && name[0] == '_') fail_unsupported("access to attribute '" + name + "' is unsafe");
    charge(1);
    switch (object.type()) {
        case Value::Type::String:
        case Value::Type::Dict:
            if (auto method = method_attribute(object, name)) return *method;
            if (object.is_dict())
                if (const Value* v = object.as_dict().find(Value::string(name))) return *v;
            return missing_attribute(object, name);
        case Value::Type::Object: {
            Object& o = object.as_object();
            if (auto* ns = dynamic_cast<Namespace*>(&o)) {
                if (const Value* v = ns->find(name)) return *v;
            } else if (auto* loop = dynamic_cast<LoopContext*>(&o)) {
                return loop->attribute(name);
            }
            return missing_attribute(object, name);
        }
        default:
            if (python_has_attribute(object, name))
                fail_unsupported("the " + object.type_name() + " attribute '" + name + "' is not supported");
            return missing_attribute(object, name);
    }
}

Value Evaluator::getitem(const Value& object, const Value& key) {
    if (object.is_undefined()) fail_undefined(object);
    charge(1);
    if (object.is_string() && key.is_integral()) {
        const std::string& s = object.as_string();
        const auto offsets = code_point_offsets(s);
        charge_bytes(s.size());
        const int64_t i = index_in(key.as_int(), static_cast<int64_t>(offsets.size()) - 1);
        if (i < 0) return Value::undefined("string index out of range");
        return Value::string(s.substr(offsets[static_cast<size_t>(i)], offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)]));
    }
    if (object.is_sequence() && key.is_integral()) {
        const Sequence& seq = object.as_sequence();
        const bool indexable = seq.kind == SeqKind::List || seq.kind == SeqKind::Tuple || seq.kind == SeqKind::Range;
        if (indexable) {
            const int64_t i = index_in(key.as_int(), static_cast<int64_t>(seq.items.size()));
            if (i < 0) return Value::undefined("'" + object.type_name() + " object' has no element " + std::to_string(key.as_int()));
            return seq.items[static_cast<size_t>(i)];
        }
    }
    if (object.is_dict() && hashable(key)) {
        if (const Value* v = object.as_dict().find(key)) return *v;
    }
    // The item failed: a string key may still name an attribute (a dict's or str's method).
    if (key.is_string()) {
        if (object.is_object()) return getattr(object, key.as_string());
        if (object.is_string() || object.is_dict())
            if (auto method = method_attribute(object, key.as_string())) return *method;
    }
    return Value::undefined("'" + object.type_name() + " object' has no element " + py_str(key));
}

std::vector<Value> Evaluator::iterate(const Value& value) {
    switch (value.type()) {
        case Value::Type::Undefined: return {};  // jinja2's Undefined iterates as empty
        case Value::Type::String: {
            const std::string& s = value.as_string();
            const auto offsets = code_point_offsets(s);
            charge_bytes(s.size());
            charge(static_cast<int64_t>(offsets.size()));
            std::vector<Value> chars;
            for (size_t i = 0; i + 1 < offsets.size(); ++i) chars.push_back(Value::string(s.substr(offsets[i], offsets[i + 1] - offsets[i])));
            return chars;
        }
        case Value::Type::Sequence: {
            const Sequence& seq = value.as_sequence();
            charge(static_cast<int64_t>(seq.items.size()));
            if (seq.kind != SeqKind::Iterator) return seq.items;
            std::vector<Value> rest(seq.items.begin() + static_cast<std::ptrdiff_t>(seq.consumed), seq.items.end());
            seq.consumed = seq.items.size();
            return rest;
        }
        case Value::Type::Dict: {
            const Dict& d = value.as_dict();
            charge(static_cast<int64_t>(d.items.size()));
            std::vector<Value> keys;
            for (const auto& item : d.items) keys.push_back(item.first);
            return keys;
        }
        case Value::Type::Object:
            if (dynamic_cast<const LoopContext*>(&value.as_object())) fail_unsupported("iterating over the loop variable is not supported");
            break;
        default: break;
    }
    fail_type("'" + value.type_name() + "' object is not iterable");
}

}  // namespace lorascope::chat
