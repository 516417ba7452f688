#include "chat/objects.h"

#include "chat/evaluator.h"
#include "chat/render_error.h"

#include <algorithm>
#include <optional>

namespace lorascope::chat {

std::string Namespace::repr() const {
    std::string out = "<Namespace {";
    for (size_t i = 0; i < attrs_.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(Value::string(attrs_[i].first)) + ": " + py_repr(attrs_[i].second);
    }
    return out + "}>";
}

const Value* Namespace::find(const std::string& name) const {
    for (const auto& [n, v] : attrs_)
        if (n == name) return &v;
    return nullptr;
}

void Namespace::set(const std::string& name, Value value) {
    for (auto& [n, v] : attrs_) {
        if (n == name) {
            v = std::move(value);
            return;
        }
    }
    attrs_.emplace_back(name, std::move(value));
}

std::string LoopContext::repr() const {
    return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_->size()) + ">";
}

namespace {

Value loop_cycle(Evaluator&, const Value& self, CallArgs& args) {
    if (!args.keywords.empty()) fail_type("cycle() takes no keyword arguments");
    if (args.positional.empty()) fail_type("no items for cycling given");
    const auto& loop = dynamic_cast<const LoopContext&>(self.as_object());
    return args.positional[loop.index() % args.positional.size()];
}

}  // namespace

Value LoopContext::attribute(const std::string& name) const {
    const int64_t n = static_cast<int64_t>(items_->size());
    const int64_t i = static_cast<int64_t>(index_);
    if (name == "index0") return Value::integer(i);
    if (name == "index") return Value::integer(i + 1);
    if (name == "revindex0") return Value::integer(n - i - 1);
    if (name == "revindex") return Value::integer(n - i);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(i == n - 1);
    if (name == "length") return Value::integer(n);
    if (name == "depth") return Value::integer(1);
    if (name == "depth0") return Value::integer(0);
    if (name == "previtem") return i > 0 ? (*items_)[index_ - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem") return i + 1 < n ? (*items_)[index_ + 1] : Value::undefined("there is no next item");
    if (name == "cycle") {
        // Bound to a copy of this context: the method outlives nothing it needs.
        return Value::object(std::make_shared<BoundMethod>(Value::object(std::make_shared<LoopContext>(items_, index_)), loop_cycle));
    }
    if (name == "changed") fail_unsupported("loop.changed() is not supported");
    return Value::undefined("'LoopContext object' has no attribute '" + name + "'");
}

Value Macro::call(Evaluator& ev, CallArgs& args) const {
    const std::shared_ptr<Scope> defining = scope_.lock();
    if (!defining) fail_unsupported("calling the macro '" + def_.name + "' outside the scope it was defined in is not supported");
    const auto& params = def_.targets;
    if (args.positional.size() > params.size())
        fail_type("macro '" + def_.name + "' takes not more than " + std::to_string(params.size()) + " argument(s)");
    std::vector<std::optional<Value>> bound(params.size());
    for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = std::move(args.positional[i]);
    for (auto& [name, value] : args.keywords) {
        const auto it = std::find(params.begin(), params.end(), name);
        if (it == params.end()) fail_type("macro '" + def_.name + "' takes no keyword argument '" + name + "'");
        auto& slot = bound[static_cast<size_t>(it - params.begin())];
        if (slot) fail_type("macro '" + def_.name + "' got multiple values for argument '" + name + "'");
        slot = std::move(value);
    }
    auto scope = std::make_shared<Scope>();
    scope->parent = defining;
    const size_t first_default = params.size() - def_.exprs.size();
    for (size_t i = 0; i < params.size(); ++i) {
        if (bound[i]) {
            scope->set(params[i], std::move(*bound[i]));
        } else if (i >= first_default) {
            // Defaults are evaluated at each call, in the macro's scope (they may use earlier parameters).
            scope->set(params[i], ev.eval_in(*def_.exprs[i - first_default], scope));
        } else {
            scope->set(params[i], Value::undefined("parameter '" + params[i] + "' was not provided"));
        }
    }
    return Value::string(ev.capture(def_.bodies[0], scope));
}

}  // namespace lorascope::chat
