#include "chat/builtins.h"

#include "chat/render_error.h"

#include <algorithm>
#include <cstring>

namespace lorascope::chat {

std::vector<Value> bind_args(const std::string& what, CallArgs& args, std::initializer_list<Param> params) {
    std::vector<std::optional<Value>> slots(params.size());
    if (args.positional.size() > params.size())
        fail_type(what + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
                  std::to_string(args.positional.size()) + " given)");
    for (size_t i = 0; i < args.positional.size(); ++i) slots[i] = std::move(args.positional[i]);
    for (auto& [name, value] : args.keywords) {
        size_t i = 0;
        for (const Param& p : params) {
            if (name == p.name) break;
            ++i;
        }
        if (i == params.size()) fail_type(what + "() got an unexpected keyword argument '" + name + "'");
        if (slots[i]) fail_type(what + "() got multiple values for argument '" + name + "'");
        slots[i] = std::move(value);
    }
    std::vector<Value> bound;
    size_t i = 0;
    for (const Param& p : params) {
        if (slots[i]) bound.push_back(std::move(*slots[i]));
        else if (p.fallback) bound.push_back(*p.fallback);
        else fail_type(what + "() missing required argument '" + p.name + "'");
        ++i;
    }
    return bound;
}

namespace {

bool listed(const char* const* names, size_t n, const std::string& name) {
    return std::any_of(names, names + n, [&](const char* x) { return name == x; });
}

const char* const kJinjaFilters[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags",
    "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount",
    "wordwrap", "xmlattr"};

const char* const kJinjaTests[] = {
    "odd", "even", "divisibleby", "defined", "undefined", "filter", "test", "none", "boolean", "false", "true",
    "integer", "float", "lower", "upper", "string", "mapping", "number", "sequence", "iterable", "callable",
    "sameas", "escaped", "in", "==", "eq", "equalto", "!=", "ne", ">", "gt", "greaterthan", "ge", ">=", "<",
    "lt", "lessthan", "<=", "le"};

}  // namespace

FilterFn find_filter(const std::string& name) {
    if (FilterFn f = find_text_filter(name)) return f;
    return find_sequence_filter(name);
}

bool jinja_has_filter(const std::string& name) { return listed(kJinjaFilters, std::size(kJinjaFilters), name); }
bool jinja_has_test(const std::string& name) { return listed(kJinjaTests, std::size(kJinjaTests), name); }

}  // namespace lorascope::chat
