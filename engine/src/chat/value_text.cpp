#include "chat/value_text.h"

#include "chat/py_text.h"
#include "chat/render_error.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lorascope::chat {

namespace {

std::string join_repr(const std::vector<Value>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(items[i]);
    }
    return out;
}

std::string sequence_repr(const Value& value) {
    const Sequence& s = value.as_sequence();
    switch (s.kind) {
        case SeqKind::List: return "[" + join_repr(s.items) + "]";
        case SeqKind::Tuple: return "(" + join_repr(s.items) + (s.items.size() == 1 ? ",)" : ")");
        case SeqKind::DictItems:
        case SeqKind::DictKeys:
        case SeqKind::DictValues: return value.type_name() + "([" + join_repr(s.items) + "])";
        case SeqKind::Range: {
            std::string out = "range(" + std::to_string(s.range_start) + ", " + std::to_string(s.range_stop);
            if (s.range_step != 1) out += ", " + std::to_string(s.range_step);
            return out + ")";
        }
        case SeqKind::Iterator: break;
    }
    fail_unsupported("printing a generator (Python shows its memory address; convert it with |list)");
}

std::string dict_repr(const Dict& d) {
    std::string out = "{";
    for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(d.items[i].first) + ": " + py_repr(d.items[i].second);
    }
    return out + "}";
}

std::string object_repr(const Value& value) {
    if (const auto* printable = dynamic_cast<const Printable*>(&value.as_object())) return printable->repr();
    fail_unsupported("printing a " + value.type_name() + " (Python shows its memory address)");
}

// ---- json.dumps ----

void append_json_string(std::string& out, const std::string& text, bool ensure_ascii) {
    out += '"';
    char buf[16];
    size_t pos = 0;
    while (pos < text.size()) {
        size_t len = 0;
        const char32_t cp = tokenizer::utf8_next(text, pos, &len);
        switch (cp) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {
                    if (cp < 0x10000) {
                        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
                    } else {
                        const unsigned n = static_cast<unsigned>(cp) - 0x10000;
                        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 | ((n >> 10) & 0x3FF), 0xDC00 | (n & 0x3FF));
                    }
                    out += buf;
                } else {
                    out.append(text, pos, len);
                }
        }
        pos += len;
    }
    out += '"';
}

std::string json_float(double f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    return py_repr_float(f);
}

class JsonWriter {
public:
    explicit JsonWriter(const JsonOptions& o)
        : o_(o),
          item_sep_(o.item_separator.value_or(o.indent ? "," : ", ")),
          key_sep_(o.key_separator.value_or(": ")) {}

    void write(const Value& v, int level) {
        switch (v.type()) {
            case Value::Type::None: out += "null"; return;
            case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; return;
            case Value::Type::Int: out += std::to_string(v.as_int()); return;
            case Value::Type::Float: out += json_float(v.as_double()); return;
            case Value::Type::String: append_json_string(out, v.as_string(), o_.ensure_ascii); return;
            case Value::Type::Sequence:
                if (v.is_list_or_tuple()) return write_list(v.as_sequence().items, level);
                break;
            case Value::Type::Dict: return write_dict(v.as_dict(), level);
            default: break;
        }
        fail_type("Object of type " + v.type_name() + " is not JSON serializable");
    }

    std::string out;

private:
    void open(char bracket, int level) {
        out += bracket;
        if (o_.indent) newline(level + 1);
    }
    void separate(int level) {
        out += item_sep_;
        if (o_.indent) newline(level + 1);
    }
    void close(char bracket, int level) {
        if (o_.indent) newline(level);
        out += bracket;
    }
    void newline(int level) {
        out += '\n';
        for (int i = 0; i < level; ++i) out += *o_.indent;
    }

    void write_list(const std::vector<Value>& items, int level) {
        if (items.empty()) {
            out += "[]";
            return;
        }
        open('[', level);
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) separate(level);
            write(items[i], level + 1);
        }
        close(']', level);
    }

    static std::string key_text(const Value& key) {
        switch (key.type()) {
            case Value::Type::String: return key.as_string();
            case Value::Type::None: return "null";
            case Value::Type::Bool: return key.as_bool() ? "true" : "false";
            case Value::Type::Int: return std::to_string(key.as_int());
            case Value::Type::Float: return json_float(key.as_double());
            default: fail_type("keys must be str, int, float, bool or None, not " + key.type_name());
        }
    }

    std::vector<const std::pair<Value, Value>*> ordered(const Dict& d) const {
        std::vector<const std::pair<Value, Value>*> items;
        for (const auto& item : d.items) items.push_back(&item);
        if (!o_.sort_keys) return items;
        const bool all_strings = std::all_of(items.begin(), items.end(), [](auto* p) { return p->first.is_string(); });
        const bool all_numbers = std::all_of(items.begin(), items.end(), [](auto* p) { return p->first.is_number(); });
        if (!all_strings && !all_numbers) fail_type("sort_keys needs keys of one comparable type");
        std::stable_sort(items.begin(), items.end(), [&](auto* a, auto* b) {
            return all_strings ? a->first.as_string() < b->first.as_string() : a->first.as_double() < b->first.as_double();
        });
        return items;
    }

    void write_dict(const Dict& d, int level) {
        if (d.items.empty()) {
            out += "{}";
            return;
        }
        open('{', level);
        bool first = true;
        for (const auto* item : ordered(d)) {
            if (!first) separate(level);
            first = false;
            append_json_string(out, key_text(item->first), o_.ensure_ascii);
            out += key_sep_;
            write(item->second, level + 1);
        }
        close('}', level);
    }

    const JsonOptions& o_;
    std::string item_sep_, key_sep_;
};

}  // namespace

std::string py_str(const Value& value) {
    switch (value.type()) {
        case Value::Type::Undefined: return "";
        case Value::Type::String: return value.as_string();
        default: return py_repr(value);
    }
}

std::string py_repr(const Value& value) {
    switch (value.type()) {
        case Value::Type::Undefined: return "Undefined";
        case Value::Type::None: return "None";
        case Value::Type::Bool: return value.as_bool() ? "True" : "False";
        case Value::Type::Int: return std::to_string(value.as_int());
        case Value::Type::Float: return py_repr_float(value.as_double());
        case Value::Type::String: return py_repr_string(value.as_string());
        case Value::Type::Sequence: return sequence_repr(value);
        case Value::Type::Dict: return dict_repr(value.as_dict());
        case Value::Type::Object: return object_repr(value);
    }
    return "";
}

std::string py_json_dumps(const Value& value, const JsonOptions& options) {
    JsonWriter writer(options);
    writer.write(value, 0);
    return std::move(writer.out);
}

}  // namespace lorascope::chat
