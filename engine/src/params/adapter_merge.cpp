// A request's adapter merge (lorascope/adapter.h): parsed from LoRAX's merged_adapters object,
// checked, and named so that equal merges share one cache entry.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "lorascope/adapter.h"
#include "lorascope/error.h"
#include "lorascope/json_input.h"

namespace lorascope {

namespace {

using Json = nlohmann::json;

[[noreturn]] void reject(const std::string& source, const std::string& message) {
    throw Error(ErrorKind::InvalidArgument, source, message);
}

// Shortest text that reads back as the same double, so that a name identifies its weights exactly.
std::string exact(double value) {
    char buffer[32];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
        if (std::strtod(buffer, nullptr) == value) break;
    }
    return buffer;
}

MergeStrategy strategy_from(const std::string& name, const std::string& source) {
    for (MergeStrategy s : {MergeStrategy::Linear, MergeStrategy::Ties, MergeStrategy::DareLinear, MergeStrategy::DareTies})
        if (name == to_string(s)) return s;
    reject(source, "merge_strategy " + json_excerpt(Json(name)) + " is not one of linear, ties, dare_linear, dare_ties");
}

MajoritySignMethod sign_method_from(const std::string& name, const std::string& source) {
    for (MajoritySignMethod m : {MajoritySignMethod::Total, MajoritySignMethod::Frequency})
        if (name == to_string(m)) return m;
    reject(source, "majority_sign_method " + json_excerpt(Json(name)) + " is not one of total, frequency");
}

double number(const Json& v, const std::string& field, const std::string& source) {
    if (!v.is_number()) reject(source, field + " must be a number, got " + v.dump());
    return v.get<double>();
}

std::string text(const Json& v, const std::string& field, const std::string& source) {
    if (!v.is_string()) reject(source, field + " must be a string, got " + v.dump());
    return v.get<std::string>();
}

AdapterMerge merge_from_json(const Json& o, const std::string& source) {
    if (!o.is_object()) reject(source, "merged_adapters must be a JSON object");
    AdapterMerge m;
    bool have_weights = false;
    for (auto it = o.begin(); it != o.end(); ++it) {
        const std::string& key = it.key();
        const Json& v = it.value();
        if (v.is_null()) continue;
        if (key == "ids") {
            if (!v.is_array()) reject(source, "ids must be a list of adapter names");
            if (v.size() > kMaxMergedAdapters)
                reject(source, "a merge takes at most " + std::to_string(kMaxMergedAdapters) + " adapters, got " +
                                   std::to_string(v.size()));
            for (const Json& id : v) m.ids.push_back(text(id, "ids", source));
        } else if (key == "weights") {
            if (!v.is_array()) reject(source, "weights must be a list of numbers");
            if (v.size() > kMaxMergedAdapters) reject(source, "weights holds more entries than a merge may have adapters");
            for (const Json& w : v) m.weights.push_back(number(w, "weights", source));
            have_weights = true;
        } else if (key == "merge_strategy") {
            m.strategy = strategy_from(text(v, key, source), source);
        } else if (key == "density") {
            m.density = number(v, key, source);
        } else if (key == "majority_sign_method") {
            m.majority_sign_method = sign_method_from(text(v, key, source), source);
        } else if (key == "seed") {
            if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
                reject(source, "seed must be an integer, 0 or more, got " + v.dump());
            m.seed = v.get<uint64_t>();
        } else {
            reject(source, "unknown merged_adapters field '" + json_key_excerpt(key) +
                               "' (known: ids, weights, merge_strategy, density, majority_sign_method, seed)");
        }
    }
    if (!have_weights) m.weights.assign(m.ids.size(), 1.0);
    check_adapter_merge(m, source);
    return m;
}

}  // namespace

const char* to_string(MergeStrategy strategy) {
    switch (strategy) {
        case MergeStrategy::Linear: return "linear";
        case MergeStrategy::Ties: return "ties";
        case MergeStrategy::DareLinear: return "dare_linear";
        case MergeStrategy::DareTies: return "dare_ties";
    }
    return "linear";
}

const char* to_string(MajoritySignMethod method) {
    return method == MajoritySignMethod::Frequency ? "frequency" : "total";
}

void check_adapter_merge(const AdapterMerge& m, const std::string& source) {
    if (m.ids.empty()) reject(source, "a merge needs at least one adapter id");
    if (m.ids.size() > kMaxMergedAdapters)
        reject(source, "a merge takes at most " + std::to_string(kMaxMergedAdapters) + " adapters");
    if (m.weights.size() != m.ids.size())
        reject(source, "weights has " + std::to_string(m.weights.size()) + " entries for " + std::to_string(m.ids.size()) +
                           " adapter ids; give one weight per adapter");
    for (const std::string& id : m.ids)
        if (id.empty()) reject(source, "adapter ids must not be empty (the base model has no factors to merge)");
    for (double w : m.weights)
        if (!std::isfinite(w) || w < 0)
            reject(source, "weights must be finite and 0 or more (PEFT merges with sqrt(weight * scaling)), got " + exact(w));
    if (!(m.density >= 0 && m.density <= 1)) reject(source, "density must be in [0, 1], got " + exact(m.density));
}

void check_merge_ranks(const AdapterMerge& m, const std::map<std::string, int64_t>& ranks, const std::string& source) {
    const std::string* first = nullptr;
    int64_t first_rank = 0;
    for (const std::string& id : m.ids) {
        auto it = ranks.find(id);
        if (it == ranks.end()) continue;
        if (!first) {
            first = &id;
            first_rank = it->second;
        } else if (it->second != first_rank) {
            reject(source, "every adapter of a merge must have the same r (as PEFT's add_weighted_adapter requires): '" +
                               *first + "' has r " + std::to_string(first_rank) + ", '" + id + "' r " +
                               std::to_string(it->second));
        }
    }
}

AdapterMerge parse_adapter_merge(const std::string& json_object_text, const std::string& source) {
    Json object;
    try {
        object = Json::parse(json_object_text);
    } catch (const Json::exception& e) {
        reject(source, std::string("merged_adapters is not valid JSON: ") + e.what());
    }
    return merge_from_json(object, source);
}

std::string merge_name(const AdapterMerge& m) {
    // PEFT merges one adapter linearly whatever the strategy; density and signs matter only where read.
    const MergeStrategy s = m.ids.size() == 1 ? MergeStrategy::Linear : m.strategy;
    std::string name = std::string("merge:") + to_string(s) + "(";
    for (size_t i = 0; i < m.ids.size(); ++i)
        // Quoted as JSON strings, so that no id can make two merges read alike.
        name += (i ? "," : "") + Json(m.ids[i]).dump() + "*" + exact(i < m.weights.size() ? m.weights[i] : 1.0);
    if (s != MergeStrategy::Linear && m.density < 1) name += ";density=" + exact(m.density);
    if (s == MergeStrategy::Ties || s == MergeStrategy::DareTies) name += std::string(";") + to_string(m.majority_sign_method);
    if ((s == MergeStrategy::DareLinear || s == MergeStrategy::DareTies) && m.density < 1)
        name += ";seed=" + std::to_string(m.seed);
    return name + ")";
}

}  // namespace lorascope
