// The values a chat template computes with, with Python's semantics as jinja2 evaluates them:
// undefined, None, bool, int, float, str, list/tuple (and the iterators and views that filters and
// dict methods return), dict (insertion-ordered), and objects (namespace(), the loop variable,
// callables). Values are immutable and cheap to copy (shared); only namespaces change.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace lorascope::chat {

class Value;
class Object;

// What a list-like value is in Python: the kind decides how it prints, compares and indexes.
enum class SeqKind {
    List,
    Tuple,
    Iterator,    // a generator or iterator (map, select, items, reverse): consumed once, no len()
    DictItems,   // dict.items() / keys() / values() views
    DictKeys,
    DictValues,
    Range,       // range(): prints as range(start, stop[, step])
};

struct Sequence {
    std::vector<Value> items;
    SeqKind kind = SeqKind::List;
    int depth = 1;                   // nesting of lists and dicts, 1 for a flat one
    bool holds_objects = false;      // some item (at any depth) is a namespace, loop or callable
    int64_t range_start = 0, range_stop = 0, range_step = 1;  // kind == Range
    mutable size_t consumed = 0;     // kind == Iterator: items already taken
};

struct Dict {
    std::vector<std::pair<Value, Value>> items;          // insertion order
    std::unordered_map<std::string, size_t> string_keys;  // index of the items whose key is a str
    int depth = 1;
    bool holds_objects = false;
    const Value* find(const Value& key) const;  // Python's key equality (1 == 1.0 == True)
};

struct Undefined {
    std::shared_ptr<const std::string> name;  // what was looked up, for error messages
};

class Value {
public:
    enum class Type { Undefined, None, Bool, Int, Float, String, Sequence, Dict, Object };

    Value() : data_(Undefined{}) {}
    static Value undefined(const std::string& name);
    static Value none() { return Value(Data(nullptr)); }
    static Value boolean(bool b) { return Value(Data(b)); }
    static Value integer(int64_t i) { return Value(Data(i)); }
    static Value number(double f) { return Value(Data(f)); }
    static Value string(std::string s);
    static Value sequence(std::vector<Value> items, SeqKind kind = SeqKind::List);
    static Value range(int64_t start, int64_t stop, int64_t step, std::vector<Value> items);
    // Keys must be unique (the caller merges duplicates as a Python dict literal would).
    static Value dict(std::vector<std::pair<Value, Value>> items);
    static Value object(std::shared_ptr<Object> object);

    Type type() const { return static_cast<Type>(data_.index()); }
    bool is_undefined() const { return type() == Type::Undefined; }
    bool is_none() const { return type() == Type::None; }
    bool is_bool() const { return type() == Type::Bool; }
    bool is_int() const { return type() == Type::Int; }    // not bool (unlike Python's isinstance)
    bool is_float() const { return type() == Type::Float; }
    bool is_number() const { return is_bool() || is_int() || is_float(); }  // numbers.Number
    bool is_integral() const { return is_bool() || is_int(); }               // isinstance(x, int)
    bool is_string() const { return type() == Type::String; }
    bool is_sequence() const { return type() == Type::Sequence; }
    bool is_dict() const { return type() == Type::Dict; }
    bool is_object() const { return type() == Type::Object; }
    bool is_list_or_tuple() const;

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const;          // bool or int
    double as_double() const;        // any number
    const std::string& as_string() const { return *std::get<StringRef>(data_); }
    const Sequence& as_sequence() const { return *std::get<SequenceRef>(data_); }
    const Dict& as_dict() const { return *std::get<DictRef>(data_); }
    Object& as_object() const { return *std::get<ObjectRef>(data_); }
    const std::string& undefined_name() const;

    int depth() const;          // 0 for scalars
    bool holds_objects() const; // an object, or a container holding one
    // Python truthiness (bool(x)): empty containers, 0, "", None and undefined are false.
    bool truthy() const;
    // Python's type name, for error messages ("str", "NoneType", "dict", ...).
    std::string type_name() const;

private:
    using StringRef = std::shared_ptr<const std::string>;
    using SequenceRef = std::shared_ptr<const Sequence>;
    using DictRef = std::shared_ptr<const Dict>;
    using ObjectRef = std::shared_ptr<Object>;
    using Data = std::variant<Undefined, std::nullptr_t, bool, int64_t, double, StringRef, SequenceRef, DictRef, ObjectRef>;
    explicit Value(Data data) : data_(std::move(data)) {}
    Data data_;
};

// A namespace(), the loop variable, a macro, a builtin or a bound method.
class Object {
public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;
    virtual bool callable() const { return false; }
    virtual bool iterable() const { return false; }
};

// Python's ==, with int/float/bool compared as numbers, list != tuple, dicts by content. Objects
// are equal only to themselves.
// `work`, when given, is increased by the number of items compared (the caller charges it).
bool py_equal(const Value& a, const Value& b, int64_t* work = nullptr);
// A hashable value can be a dict key (str, numbers, None, tuples of hashables).
bool hashable(const Value& v);

}  // namespace lorascope::chat
