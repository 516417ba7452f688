#include "request_json.h"

#include "lorascope/error.h"
#include "lorascope/params_json.h"

namespace lorascope::cli {

using nlohmann::json;

Request parse_request(const json& r, const std::string& source) {
    for (const auto& item : r.items()) {
        const auto& k = item.key();
        if (k != "id" && k != "prompt" && k != "input_ids" && k != "params" && k != "adapter")
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
    if (r.contains("params")) {
        if (!r["params"].is_object()) throw Error(ErrorKind::InvalidArgument, source, "\"params\" must be an object");
        request.params = generation_params_from_json(r["params"], source);
    }
    return request;
}

}  // namespace lorascope::cli
