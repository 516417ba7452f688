// Typed reads from JSON objects whose errors name the file and the field.
// Shared by every reader of Hugging Face / PEFT JSON files (config, generation config, adapter
// config, safetensors headers, tokenizer files).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::json {

using Json = nlohmann::json;

// Parses text (lorascope/json_input.h: nesting at most 64 deep); a syntax error becomes
// ErrorKind::Format naming `path` and the byte offset.
Json parse(const std::string& text, const std::string& path);
// Reads the whole file (NotFound when absent) and parses it.
Json parse_file(const std::string& path);
std::string read_text_file(const std::string& path);

// Reader over one JSON object. Absent keys and explicit nulls both mean "use the default",
// as Hugging Face's config classes treat them. A value of the wrong type is a Format error
// naming the field.
class ObjectReader {
public:
    ObjectReader(const Json& object, std::string path, std::string context = {});

    bool has(const std::string& key) const;  // present and not null
    bool contains_key(const std::string& key) const;  // present, possibly null
    const Json* find(const std::string& key) const;

    int64_t get_int(const std::string& key, int64_t fallback) const;
    std::optional<int64_t> get_int(const std::string& key) const;
    double get_double(const std::string& key, double fallback) const;
    std::optional<double> get_double(const std::string& key) const;
    bool get_bool(const std::string& key, bool fallback) const;
    std::optional<bool> get_bool(const std::string& key) const;
    std::string get_string(const std::string& key, const std::string& fallback) const;
    std::optional<std::string> get_string(const std::string& key) const;
    std::vector<std::string> get_string_list(const std::string& key) const;
    // An int or a list of ints (eos_token_id may be either).
    std::vector<int64_t> get_int_or_list(const std::string& key) const;

    const std::string& path() const { return path_; }
    [[noreturn]] void fail_field(const std::string& key, const std::string& problem) const;

private:
    const Json& object_;
    std::string path_;
    std::string context_;  // e.g. "rank_pattern." prefix for nested objects
};

}  // namespace lorascope::json
