#include "request_json.h"

#include <algorithm>
#include <iterator>

#include "lorascope/adapter.h"
#include "lorascope/error.h"
#include "lorascope/params_json.h"

namespace lorascope::cli {

using nlohmann::json;

namespace {

std::vector<int64_t> integer_list(const json& v, const std::string& source, const char* field) {
    std::vector<int64_t> out;
    if (!v.is_array()) throw Error(ErrorKind::InvalidArgument, source, std::string("\"") + field + "\" must be a list of integers");
    for (const auto& x : v) {
        if (!x.is_number_integer())
            throw Error(ErrorKind::InvalidArgument, source, std::string("\"") + field + "\" must be a list of integers");
        out.push_back(x.get<int64_t>());
    }
    return out;
}

// The fields of issue 32: a merge of adapters, and the target an encoder-decoder model scores.
void parse_inspection_fields(const json& r, const std::string& source, Request& request) {
    if (r.contains("merged_adapters") && !r["merged_adapters"].is_null()) {
        if (!r["merged_adapters"].is_object())
            throw Error(ErrorKind::InvalidArgument, source, "\"merged_adapters\" must be an object");
        if (!request.adapter.empty())
            throw Error(ErrorKind::InvalidArgument, source, "give \"adapter\" or \"merged_adapters\", not both");
        request.merge = parse_adapter_merge(r["merged_adapters"].dump(), source);
    }
    if (r.contains("target") && r.contains("target_ids"))
        throw Error(ErrorKind::InvalidArgument, source, "give at most one of \"target\" or \"target_ids\"");
    if (r.contains("target")) {
        if (!r["target"].is_string()) throw Error(ErrorKind::InvalidArgument, source, "\"target\" must be a string");
        request.target = r["target"].get<std::string>();
    }
    if (r.contains("target_ids")) request.target_ids = integer_list(r["target_ids"], source, "target_ids");
}

}  // namespace

std::optional<std::string> local_adapter_path(const json& r, const std::string& source) {
    if (!r.contains("adapter_source") || r["adapter_source"].is_null()) return std::nullopt;
    if (!r["adapter_source"].is_string())
        throw Error(ErrorKind::InvalidArgument, source, "\"adapter_source\" must be a string");
    const std::string kind = r["adapter_source"].get<std::string>();
    if (kind == "registered") return std::nullopt;
    if (kind != "local")
        throw Error(ErrorKind::InvalidArgument, source,
                    "adapter_source \"" + kind + "\" is not supported (adapters are never downloaded): use \"local\" for "
                    "a directory under the allowed adapter directory, or \"registered\" (the default) for a loaded adapter");
    if (!r.contains("adapter") || !r["adapter"].is_string() || r["adapter"].get<std::string>().empty())
        throw Error(ErrorKind::InvalidArgument, source, "adapter_source \"local\" needs \"adapter\": the adapter's path");
    return r["adapter"].get<std::string>();
}

Request parse_request(const json& r, const std::string& source) {
    static const char* const known[] = {"id", "prompt", "input_ids", "params", "adapter", "merged_adapters",
                                        "adapter_source", "target", "target_ids"};
    for (const auto& item : r.items()) {
        const auto& k = item.key();
        if (std::find(std::begin(known), std::end(known), k) == std::end(known))
            throw Error(ErrorKind::InvalidArgument, source, "unknown request field \"" + k + "\"");
    }
    if (r.contains("prompt") == r.contains("input_ids"))
        throw Error(ErrorKind::InvalidArgument, source, "give exactly one of \"prompt\" or \"input_ids\"");
    Request request;
    if (r.contains("prompt")) {
        if (!r["prompt"].is_string()) throw Error(ErrorKind::InvalidArgument, source, "\"prompt\" must be a string");
        request.prompt = r["prompt"].get<std::string>();
    } else {
        if (!r["input_ids"].is_array()) throw Error(ErrorKind::InvalidArgument, source, "\"input_ids\" must be a list of integers");
        for (const auto& v : r["input_ids"]) {
            if (!v.is_number_integer())
                throw Error(ErrorKind::InvalidArgument, source, "\"input_ids\" must be a list of integers");
            request.input_ids.push_back(v.get<int64_t>());
        }
    }
    if (r.contains("adapter")) {
        if (!r["adapter"].is_string() && !r["adapter"].is_null())
            throw Error(ErrorKind::InvalidArgument, source, "\"adapter\" must be a string");
        if (r["adapter"].is_string()) request.adapter = r["adapter"].get<std::string>();
    }
    parse_inspection_fields(r, source, request);
    if (r.contains("params")) {
        if (!r["params"].is_object()) throw Error(ErrorKind::InvalidArgument, source, "\"params\" must be an object");
        request.params = generation_params_from_json(r["params"], source);
    }
    return request;
}

}  // namespace lorascope::cli
