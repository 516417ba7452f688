#include "lorascope/json_input.h"

#include <algorithm>

namespace lorascope {

namespace {

// Thrown from the parser's callback: stops the parse at the first container past the limit.
struct TooDeep {};

}  // namespace

nlohmann::json parse_json_input(std::string_view text, const std::string& source, const JsonLimits& limits,
                                ErrorKind kind) {
    if (limits.max_bytes > 0 && text.size() > limits.max_bytes)
        throw Error(kind, source,
                    "JSON text of " + std::to_string(text.size()) + " bytes, more than the " +
                        std::to_string(limits.max_bytes) + " allowed");
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
        throw Error(kind, source, "malformed JSON at byte " + std::to_string(nul) + ": a NUL byte");
    const int max_depth = limits.max_depth;
    // `depth` is the number of containers already open around the one starting.
    auto bound_depth = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        if ((event == nlohmann::json::parse_event_t::object_start ||
             event == nlohmann::json::parse_event_t::array_start) &&
            depth >= max_depth)
            throw TooDeep{};
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), bound_depth);
    } catch (const TooDeep&) {
        throw Error(kind, source, "JSON nested deeper than " + std::to_string(max_depth) + " levels");
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(kind, source, "malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
    } catch (const nlohmann::json::exception& e) {
        // Valid syntax the parser still refuses: a number beyond double's range (1e309) is
        // out_of_range, not parse_error.
        throw Error(kind, source, std::string("malformed JSON: ") + e.what());
    }
}

std::string json_excerpt(const nlohmann::json& value, size_t max_chars) {
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > max_chars) {
        text.resize(max_chars);
        text += "...";
    }
    return text;
}

std::string json_key_excerpt(std::string_view key, size_t max_chars) {
    const bool plain = key.size() <= max_chars && std::all_of(key.begin(), key.end(), [](char c) {
                           return c >= 0x20 && c <= 0x7e && c != '`' && c != '\'';
                       });
    if (plain) return std::string(key);
    return json_excerpt(nlohmann::json(std::string(key)), max_chars);
}

}  // namespace lorascope
