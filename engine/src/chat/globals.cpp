// The global functions a chat template can call: jinja2's range (capped as its sandbox caps it),
// dict and namespace, and transformers' raise_exception and strftime_now.
#include "chat/evaluator.h"
#include "chat/objects.h"
#include "chat/render_error.h"
#include "chat/strftime.h"
#include "chat/value_text.h"

#include <algorithm>

namespace lorascope::chat {

namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

int64_t as_index(const Value& v) {
    if (!v.is_integral()) fail_type("'" + v.type_name() + "' object cannot be interpreted as an integer");
    return v.as_int();
}

Value g_range(Evaluator& ev, CallArgs& args) {
    if (!args.keywords.empty()) fail_type("range() takes no keyword arguments");
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) fail_type("range expected at most 3 arguments, got " + std::to_string(p.size()));
    int64_t start = 0, stop = 0, step = 1;
    if (p.size() == 1) {
        stop = as_index(p[0]);
    } else {
        start = as_index(p[0]);
        stop = as_index(p[1]);
        if (p.size() == 3) step = as_index(p[2]);
    }
    if (step == 0) fail_type("range() arg 3 must not be zero");
    const __int128 span = static_cast<__int128>(stop) - start;
    const __int128 count = (step > 0 ? (span > 0 ? (span + step - 1) / step : 0) : (span < 0 ? (span + step + 1) / step : 0));
    if (count > kMaxRange)
        throw RenderError(ErrorKind::Unsafe, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    std::vector<Value> items;
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::integer(start + i * step));
    ev.charge(static_cast<int64_t>(items.size()));
    return Value::range(start, stop, step, std::move(items));
}

// dict(mapping or pairs, **keywords), as Python's dict() builds it.
std::vector<std::pair<Value, Value>> dict_items(Evaluator& ev, CallArgs& args, const char* what) {
    if (args.positional.size() > 1) fail_type(std::string(what) + " expected at most 1 argument, got " + std::to_string(args.positional.size()));
    std::vector<std::pair<Value, Value>> items;
    if (!args.positional.empty()) {
        const Value& source = args.positional[0];
        if (source.is_dict()) {
            items = source.as_dict().items;
        } else {
            for (const Value& pair : ev.iterate(source)) {
                const auto kv = ev.iterate(pair);
                if (kv.size() != 2) fail_type("dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
                items.emplace_back(kv[0], kv[1]);
            }
        }
    }
    for (auto& [name, value] : args.keywords) items.emplace_back(Value::string(name), value);
    return items;
}

Value g_dict(Evaluator& ev, CallArgs& args) { return ev.make_dict(dict_items(ev, args, "dict")); }

Value g_namespace(Evaluator& ev, CallArgs& args) {
    auto ns = std::make_shared<Namespace>();
    const Value d = ev.make_dict(dict_items(ev, args, "namespace"));
    for (const auto& [key, value] : d.as_dict().items) {
        if (!key.is_string()) fail_type("keywords must be strings");
        ns->set(key.as_string(), value);
    }
    return Value::object(std::move(ns));
}

Value g_raise_exception(Evaluator& ev, CallArgs& args) {
    const auto a = bind_args("raise_exception", args, {{"message", std::nullopt}});
    // transformers raises jinja2's TemplateError(message): the request's error is that message.
    throw Error(ErrorKind::InvalidArgument, ev.origin(), py_str(a[0]));
}

Value g_strftime_now(Evaluator& ev, CallArgs& args) {
    const auto a = bind_args("strftime_now", args, {{"format", std::nullopt}});
    if (!a[0].is_string()) fail_type("strftime() argument 1 must be str, not " + a[0].type_name());
    const ChatClock clock = ev.clock() ? *ev.clock() : local_now();
    std::string out = py_strftime(a[0].as_string(), clock);
    ev.charge_bytes(out.size());
    ev.check_string(out);
    return Value::string(std::move(out));
}

Value function(const char* name, BuiltinFn fn) { return Value::object(std::make_shared<BuiltinFunction>(name, fn)); }

}  // namespace

Value find_global(const std::string& name) {
    // Built once: the function objects hold no state.
    static const std::vector<std::pair<std::string, Value>> kGlobals = {
        {"range", function("range", g_range)},
        {"dict", function("dict", g_dict)},
        {"namespace", function("namespace", g_namespace)},
        {"raise_exception", function("raise_exception", g_raise_exception)},
        {"strftime_now", function("strftime_now", g_strftime_now)},
    };
    for (const auto& [n, v] : kGlobals)
        if (n == name) return v;
    return Value();
}

bool jinja_has_global(const std::string& name) { return name == "lipsum" || name == "cycler" || name == "joiner"; }

}  // namespace lorascope::chat
