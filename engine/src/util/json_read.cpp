#include "util/json_read.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "lorascope/error.h"
#include "lorascope/json_input.h"

namespace lorascope::json {

Json parse(const std::string& text, const std::string& path) { return parse_json_input(text, path); }

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::NotFound, path, "cannot open file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) throw Error(ErrorKind::Format, path, "read error");
    return buffer.str();
}

Json parse_file(const std::string& path) { return parse(read_text_file(path), path); }

ObjectReader::ObjectReader(const Json& object, std::string path, std::string context)
    : object_(object), path_(std::move(path)), context_(std::move(context)) {
    if (!object_.is_object())
        throw Error(ErrorKind::Format, path_,
                    (context_.empty() ? std::string("top level") : "'" + context_ + "'") +
                        " must be a JSON object");
}

void ObjectReader::fail_field(const std::string& key, const std::string& problem) const {
    throw Error(ErrorKind::Format, path_, "field '" + context_ + key + "' " + problem);
}

const Json* ObjectReader::find(const std::string& key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
}

bool ObjectReader::contains_key(const std::string& key) const { return object_.contains(key); }

bool ObjectReader::has(const std::string& key) const { return find(key) != nullptr; }

std::optional<int64_t> ObjectReader::get_int(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_number_integer()) return v->get<int64_t>();
    // Python writes 2.0 for some integers; accept whole floats, reject fractions.
    if (v->is_number_float()) {
        double d = v->get<double>();
        if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
    }
    fail_field(key, "must be an integer, got " + json_excerpt(*v));
}

int64_t ObjectReader::get_int(const std::string& key, int64_t fallback) const {
    return get_int(key).value_or(fallback);
}

std::optional<double> ObjectReader::get_double(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail_field(key, "must be a number, got " + json_excerpt(*v));
    return v->get<double>();
}

double ObjectReader::get_double(const std::string& key, double fallback) const {
    return get_double(key).value_or(fallback);
}

std::optional<bool> ObjectReader::get_bool(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail_field(key, "must be true or false, got " + json_excerpt(*v));
    return v->get<bool>();
}

bool ObjectReader::get_bool(const std::string& key, bool fallback) const {
    return get_bool(key).value_or(fallback);
}

std::optional<std::string> ObjectReader::get_string(const std::string& key) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail_field(key, "must be a string, got " + json_excerpt(*v));
    return v->get<std::string>();
}

std::string ObjectReader::get_string(const std::string& key, const std::string& fallback) const {
    return get_string(key).value_or(fallback);
}

std::vector<std::string> ObjectReader::get_string_list(const std::string& key) const {
    std::vector<std::string> out;
    const Json* v = find(key);
    if (!v) return out;
    if (!v->is_array()) fail_field(key, "must be a list of strings, got " + json_excerpt(*v));
    for (const auto& item : *v) {
        if (!item.is_string()) fail_field(key, "must be a list of strings, got " + json_excerpt(*v));
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::vector<int64_t> ObjectReader::get_int_or_list(const std::string& key) const {
    std::vector<int64_t> out;
    const Json* v = find(key);
    if (!v) return out;
    if (v->is_number_integer()) {
        out.push_back(v->get<int64_t>());
        return out;
    }
    if (!v->is_array()) fail_field(key, "must be an integer or a list of integers, got " + json_excerpt(*v));
    for (const auto& item : *v) {
        if (!item.is_number_integer())
            fail_field(key, "must be an integer or a list of integers, got " + json_excerpt(*v));
        out.push_back(item.get<int64_t>());
    }
    return out;
}

}  // namespace lorascope::json
