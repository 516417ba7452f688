// The objects a chat template handles besides plain data: namespace() (the one mutable value),
// the loop variable, and callables (builtins such as range or raise_exception, methods bound to a
// str or dict, macros).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "chat/builtins.h"
#include "chat/value.h"
#include "chat/value_text.h"

namespace lorascope::chat {

struct Scope;

class Namespace : public Object, public Printable {
public:
    std::string type_name() const override { return "Namespace"; }
    std::string repr() const override;
    const Value* find(const std::string& name) const;
    void set(const std::string& name, Value value);
    const std::vector<std::pair<std::string, Value>>& attributes() const { return attrs_; }

private:
    std::vector<std::pair<std::string, Value>> attrs_;
};

// jinja2's LoopContext for one iteration.
class LoopContext : public Object, public Printable {
public:
    LoopContext(std::shared_ptr<const std::vector<Value>> items, size_t index) : items_(std::move(items)), index_(index) {}
    std::string type_name() const override { return "LoopContext"; }
    std::string repr() const override;
    Value attribute(const std::string& name) const;  // undefined when it has none
    const std::vector<Value>& items() const { return *items_; }
    size_t index() const { return index_; }

private:
    std::shared_ptr<const std::vector<Value>> items_;
    size_t index_;
};

class Callable : public Object {
public:
    bool callable() const override { return true; }
    virtual Value call(Evaluator& ev, CallArgs& args) const = 0;
};

using BuiltinFn = Value (*)(Evaluator& ev, CallArgs& args);
class BuiltinFunction : public Callable {
public:
    BuiltinFunction(std::string name, BuiltinFn fn) : name_(std::move(name)), fn_(fn) {}
    std::string type_name() const override { return "builtin_function_or_method"; }
    Value call(Evaluator& ev, CallArgs& args) const override { return fn_(ev, args); }

private:
    std::string name_;
    BuiltinFn fn_;
};

using MethodFn = Value (*)(Evaluator& ev, const Value& self, CallArgs& args);
class BoundMethod : public Callable {
public:
    BoundMethod(Value self, MethodFn fn) : self_(std::move(self)), fn_(fn) {}
    std::string type_name() const override { return "builtin_function_or_method"; }
    Value call(Evaluator& ev, CallArgs& args) const override { return fn_(ev, self_, args); }

private:
    Value self_;
    MethodFn fn_;
};

class Macro : public Callable {
public:
    // The macro keeps only a weak reference to the scope it was defined in: the scope holds the
    // macro, and a strong one would be a cycle.
    Macro(const ast::Stmt& definition, std::weak_ptr<Scope> scope) : def_(definition), scope_(std::move(scope)) {}
    std::string type_name() const override { return "Macro"; }
    Value call(Evaluator& ev, CallArgs& args) const override;

private:
    const ast::Stmt& def_;
    std::weak_ptr<Scope> scope_;
};

// The methods of str and dict that templates call (methods.cpp): a bound method, or nullptr when
// Python's type has no such attribute. A method Python has but this engine lacks is a RenderError.
MethodFn find_string_method(const std::string& name);
MethodFn find_dict_method(const std::string& name);
// Attributes of list, tuple, int, float that exist in Python (all refused: none is implemented).
bool python_has_attribute(const Value& value, const std::string& name);

// The global functions (globals.cpp): range, dict, namespace, raise_exception, strftime_now.
Value find_global(const std::string& name);  // undefined when there is none
bool jinja_has_global(const std::string& name);

}  // namespace lorascope::chat
