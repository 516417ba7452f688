#include "chat/json_value.h"

#include "lorascope/error.h"

namespace lorascope::chat {

namespace {

// JSON nested deeper than this is refused before parsing: nlohmann parses deep nesting without
// recursion, but dump() and the conversion here recurse.
constexpr int kMaxNesting = 512;

bool nesting_exceeds(const std::string& text, int limit) {
    bool in_string = false;
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

// nlohmann reads an integer too large for 64 bits as a float, where json.loads keeps an int: such
// literals are refused before parsing. Returns the offset of the first one, or npos.
size_t oversized_integer_at(const std::string& text) {
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
            continue;
        }
        if (c < '0' || c > '9') continue;
        const size_t start = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        const bool fractional = i < text.size() && (text[i] == '.' || text[i] == 'e' || text[i] == 'E');
        if (!fractional && i - start > 18) return start;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == '+' || text[i] == '-')) ++i;
        --i;
    }
    return std::string::npos;
}

class Converter {
public:
    Converter(int max_depth, const std::string& origin, const std::string& what) : max_depth_(max_depth), origin_(origin), what_(what) {}

    Value convert(const OrderedJson& j, int depth) {
        if (depth > max_depth_)
            throw Error(ErrorKind::Unsafe, origin_, what_ + ": JSON nested deeper than the limit of " + std::to_string(max_depth_));
        switch (j.type()) {
            case OrderedJson::value_t::null: return Value::none();
            case OrderedJson::value_t::boolean: return Value::boolean(j.get<bool>());
            case OrderedJson::value_t::number_integer: return Value::integer(j.get<int64_t>());
            case OrderedJson::value_t::number_unsigned: {
                const uint64_t u = j.get<uint64_t>();
                if (u > static_cast<uint64_t>(INT64_MAX)) throw Error(ErrorKind::Unsupported, origin_, what_ + ": integers beyond 64 bits are not supported");
                return Value::integer(static_cast<int64_t>(u));
            }
            case OrderedJson::value_t::number_float: return Value::number(j.get<double>());
            case OrderedJson::value_t::string: return Value::string(j.get<std::string>());
            case OrderedJson::value_t::array: {
                std::vector<Value> items;
                items.reserve(j.size());
                for (const auto& item : j) items.push_back(convert(item, depth + 1));
                return Value::sequence(std::move(items));
            }
            case OrderedJson::value_t::object: {
                std::vector<std::pair<Value, Value>> items;
                items.reserve(j.size());
                for (const auto& [key, value] : j.items()) items.emplace_back(Value::string(key), convert(value, depth + 1));
                return Value::dict(std::move(items));
            }
            default: throw Error(ErrorKind::InvalidArgument, origin_, what_ + ": unexpected JSON value");
        }
    }

private:
    int max_depth_;
    const std::string& origin_;
    const std::string& what_;
};

}  // namespace

OrderedJson parse_json_text(const std::string& text, const std::string& origin, const std::string& what) {
    if (const size_t at = oversized_integer_at(text); at != std::string::npos)
        throw Error(ErrorKind::Unsupported, origin, what + ": integers beyond 64 bits are not supported (at byte " + std::to_string(at) + ")");
    if (nesting_exceeds(text, kMaxNesting))
        throw Error(ErrorKind::Unsafe, origin, what + ": JSON nested deeper than " + std::to_string(kMaxNesting) + " levels");
    try {
        return OrderedJson::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::InvalidArgument, origin, what + ": malformed JSON: " + e.what());
    }
}

Value json_to_value(const OrderedJson& json, int max_depth, const std::string& origin, const std::string& what) {
    return Converter(max_depth, origin, what).convert(json, 1);
}

}  // namespace lorascope::chat
