// Reading tests/oracle/chat_oracle.py's records: the conversation, options and expected text (or
// error) of one recorded render, as the engine's API takes them.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "lorascope/chat.h"
#include "test_env.h"

namespace lorascope::test {

using OrderedJson = nlohmann::ordered_json;

inline OrderedJson read_ordered_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return OrderedJson();
    std::stringstream buffer;
    buffer << in.rdbuf();
    return OrderedJson::parse(buffer.str());
}

// An oracle records file under LORASCOPE_ORACLE_DIR, read once (null when absent).
inline const OrderedJson& oracle_records(const std::string& relative) {
    static std::map<std::string, OrderedJson> cache;
    auto it = cache.find(relative);
    if (it == cache.end()) it = cache.emplace(relative, read_ordered_json(oracle_dir() + "/" + relative)).first;
    return it->second;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

inline ChatClock recorded_clock(const OrderedJson& records) {
    const auto& n = records["now"];
    return ChatClock{n[0].get<int>(), n[1].get<int>(), n[2].get<int>(), n[3].get<int>(), n[4].get<int>(), n[5].get<int>()};
}

// The conversation of a record ({"messages", "tools", "variables"}), key order kept.
inline Conversation recorded_conversation(const OrderedJson& record) {
    const std::string tools = record.contains("tools") && !record["tools"].is_null() ? record["tools"].dump() : "";
    Conversation c = parse_conversation_json(record["messages"].dump(), tools, "record");
    if (record.contains("variables") && !record["variables"].is_null()) c.variables_json = record["variables"].dump();
    return c;
}

inline ChatRenderOptions recorded_options(const OrderedJson& records, const OrderedJson& record) {
    ChatRenderOptions o;
    o.add_generation_prompt = record.value("add_generation_prompt", true);
    o.now = recorded_clock(records);
    if (record.contains("special_tokens"))
        for (const auto& [key, value] : record["special_tokens"].items()) o.special_tokens[key] = value.get<std::string>();
    return o;
}

// Where two texts first differ, for failure messages.
inline std::string first_difference(const std::string& got, const std::string& want) {
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    const size_t from = i > 40 ? i - 40 : 0;
    auto quoted = [&](const std::string& s) {
        return OrderedJson(s.substr(from, 80)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    return "at byte " + std::to_string(i) + ": got ..." + quoted(got) + " want ..." + quoted(want);
}

}  // namespace lorascope::test
