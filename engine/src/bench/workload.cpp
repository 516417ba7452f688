#include "lorascope/workload.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>

#include "lorascope/error.h"
#include "lorascope/json_input.h"
#include "lorascope/params.h"

namespace lorascope {

using nlohmann::json;

namespace {

// Far beyond any benchmark (W1-W5 use at most a few thousand requests of a few hundred tokens),
// and small enough to build under the fuzzer's 2 GB limit with ASan's overhead.
constexpr int64_t kMaxSyntheticRequests = 100'000;
constexpr int64_t kMaxSyntheticPromptTokens = 1 << 20;
constexpr int64_t kMaxSyntheticTokens = 50'000'000;  // 400 MB of prompt ids
constexpr int64_t kMaxSyntheticNewTokens = 1 << 20;

// nlohmann converts a JSON float to an integer with a plain cast, undefined when it is out of range
// (an id written as 5e82): integers are checked as integers before they are read.
int64_t integer(const json& v, const std::string& what, const std::string& path) {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
        throw Error(ErrorKind::InvalidArgument, path, what + " must be an integer, not " + v.dump());
    return v.get<int64_t>();
}

double number(const json& v, const std::string& what, const std::string& path) {
    if (!v.is_number()) throw Error(ErrorKind::InvalidArgument, path, what + " must be a number, not " + v.dump());
    return v.get<double>();
}

std::vector<int64_t> range_field(const json& s, const char* key, std::vector<int64_t> fallback, const std::string& path) {
    if (!s.contains(key)) return fallback;
    const std::string what = std::string("synthetic ") + key;
    if (!s[key].is_array()) throw Error(ErrorKind::InvalidArgument, path, what + " must be [min, max]");
    std::vector<int64_t> out;
    for (const auto& n : s[key]) out.push_back(integer(n, what, path));
    return out;
}

std::string object_text(const json& v, const std::string& what, const std::string& path) {
    if (!v.is_object()) throw Error(ErrorKind::InvalidArgument, path, what + " must be an object, not " + v.dump());
    return v.dump();
}

WorkloadItem parse_item(const json& item, const std::string& path) {
    if (!item.is_object()) throw Error(ErrorKind::InvalidArgument, path, "a request must be an object, not " + item.dump());
    WorkloadItem r;
    if (item.contains("prompt")) r.prompt = item["prompt"].get<std::string>();
    if (item.contains("input_ids")) {
        if (!item["input_ids"].is_array())
            throw Error(ErrorKind::InvalidArgument, path, "\"input_ids\" must be a list of integers");
        for (const auto& id : item["input_ids"]) r.input_ids.push_back(integer(id, "an input id", path));
    }
    if (!r.prompt && r.input_ids.empty())
        throw Error(ErrorKind::InvalidArgument, path, "a request needs \"prompt\" or \"input_ids\"");
    r.adapter = item.value("adapter", std::string());
    if (item.contains("params")) r.params_json = object_text(item["params"], "\"params\"", path);
    if (item.contains("id")) r.client_id = item["id"].is_string() ? item["id"].get<std::string>() : item["id"].dump();
    return r;
}

SyntheticWorkload parse_synthetic(const json& s, const std::string& path) {
    if (!s.is_object()) throw Error(ErrorKind::InvalidArgument, path, "\"synthetic\" must be an object");
    SyntheticWorkload out;
    out.count = s.contains("count") ? integer(s["count"], "synthetic count", path) : 0;
    const auto prompt = range_field(s, "prompt_tokens", {8, 128}, path);
    if (out.count <= 0 || prompt.size() != 2 || prompt[0] < 1 || prompt[1] < prompt[0])
        throw Error(ErrorKind::InvalidArgument, path, "synthetic needs count > 0 and prompt_tokens [min, max]");
    out.prompt_min = prompt[0];
    out.prompt_max = prompt[1];
    const auto fresh = range_field(s, "max_new_tokens", {0, 0}, path);
    if (fresh.size() != 2 || (fresh[0] != 0 && (fresh[0] < 1 || fresh[1] < fresh[0])) || fresh[1] > kMaxSyntheticNewTokens)
        throw Error(ErrorKind::InvalidArgument, path, "synthetic max_new_tokens must be [min, max] with 1 <= min <= max");
    out.max_new_min = fresh[0];
    out.max_new_max = fresh[1];
    // The prompts are built before the run: bound what they may cost, so that a typo (an extra
    // digit) is a message rather than an allocation of petabytes.
    if (out.count > kMaxSyntheticRequests)
        throw Error(ErrorKind::InvalidArgument, path, "synthetic count " + std::to_string(out.count) +
                                                          " is beyond the limit of " + std::to_string(kMaxSyntheticRequests));
    if (out.prompt_max > kMaxSyntheticPromptTokens)
        throw Error(ErrorKind::InvalidArgument, path, "synthetic prompt_tokens max " + std::to_string(out.prompt_max) +
                                                          " is beyond the limit of " + std::to_string(kMaxSyntheticPromptTokens));
    if (out.count * out.prompt_max > kMaxSyntheticTokens)
        throw Error(ErrorKind::InvalidArgument, path, "synthetic count x prompt_tokens max = " + std::to_string(out.count * out.prompt_max) +
                                                          " prompt tokens, beyond the limit of " + std::to_string(kMaxSyntheticTokens));
    if (s.contains("seed")) out.seed = static_cast<uint64_t>(integer(s["seed"], "synthetic seed", path));
    if (s.contains("min_id")) out.min_id = integer(s["min_id"], "synthetic min_id", path);
    return out;
}

WorkloadArrival parse_arrival(const json& a, const std::string& path) {
    if (!a.is_object()) throw Error(ErrorKind::InvalidArgument, path, "\"arrival\" must be an object");
    WorkloadArrival out;
    const std::string kind = a.value("kind", "all");
    if (kind == "all") {
        out.kind = ArrivalKind::All;
    } else if (kind == "poisson") {
        out.kind = ArrivalKind::Poisson;
        out.rate = a.contains("rate") ? number(a["rate"], "arrival rate", path) : 1.0;
        if (!(out.rate > 0)) throw Error(ErrorKind::InvalidArgument, path, "poisson arrival needs rate > 0");
    } else if (kind == "bursts") {
        out.kind = ArrivalKind::Bursts;
        out.burst_size = a.contains("size") ? integer(a["size"], "burst size", path) : 1;
        out.burst_interval_s = a.contains("interval_s") ? number(a["interval_s"], "burst interval_s", path) : 1.0;
        if (out.burst_size < 1 || !(out.burst_interval_s >= 0))
            throw Error(ErrorKind::InvalidArgument, path, "bursts need size >= 1 and interval_s >= 0");
    } else {
        throw Error(ErrorKind::InvalidArgument, path, "arrival kind must be \"all\", \"poisson\" or \"bursts\"");
    }
    if (a.contains("seed")) out.seed = static_cast<uint64_t>(integer(a["seed"], "arrival seed", path));
    return out;
}

Workload parse_document(const json& d, const std::string& path) {
    if (!d.is_object()) throw Error(ErrorKind::InvalidArgument, path, "a workload must be a JSON object");
    Workload w;
    w.path = path;
    w.name = d.value("name", path);
    if (d.contains("arrival")) w.arrival = parse_arrival(d["arrival"], path);
    if (d.contains("params")) w.params_json = object_text(d["params"], "\"params\"", path);
    if (d.contains("params_mix")) {
        if (!d["params_mix"].is_array()) throw Error(ErrorKind::InvalidArgument, path, "\"params_mix\" must be a list of objects");
        for (const auto& p : d["params_mix"]) w.params_mix.push_back(object_text(p, "a params_mix entry", path));
    }
    if (d.contains("adapters")) w.adapters = d["adapters"].get<std::vector<std::string>>();
    if (d.contains("requests")) {
        if (!d["requests"].is_array()) throw Error(ErrorKind::InvalidArgument, path, "\"requests\" must be a list");
        for (const auto& item : d["requests"]) w.requests.push_back(parse_item(item, path));
    } else if (d.contains("synthetic")) {
        w.synthetic = parse_synthetic(d["synthetic"], path);
    } else {
        throw Error(ErrorKind::InvalidArgument, path, "a workload needs \"requests\" or \"synthetic\"");
    }
    return w;
}

json parse_json(const std::string& text, const std::string& path) { return parse_json_input(text, path); }

std::string read_text(const std::string& path, const char* what) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorKind::NotFound, path, std::string("cannot open the ") + what);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

GenerationParams merged_params(const Workload& w, size_t index, const std::string& own) {
    json merged = json::parse(w.params_json);
    auto merge = [&](const std::string& text) {
        const json overrides = json::parse(text);   // named: items() only refers to it
        for (const auto& item : overrides.items()) merged[item.key()] = item.value();
    };
    if (!w.params_mix.empty()) merge(w.params_mix[index % w.params_mix.size()]);
    merge(own);
    return parse_generation_params(merged.dump(), w.path + " params");
}

std::vector<Request> build_requests(const Workload& w, int64_t vocab) {
    std::vector<Request> out;
    if (w.synthetic) {
        const SyntheticWorkload& s = *w.synthetic;
        if (s.min_id < 0 || s.min_id >= vocab)
            throw Error(ErrorKind::InvalidArgument, w.path, "synthetic min_id " + std::to_string(s.min_id) +
                                                              " is outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
        std::mt19937_64 rng(s.seed);
        std::uniform_int_distribution<int64_t> length(s.prompt_min, s.prompt_max);
        std::uniform_int_distribution<int64_t> id(s.min_id, vocab - 1);
        std::uniform_int_distribution<int64_t> fresh(std::max<int64_t>(1, s.max_new_min), std::max<int64_t>(1, s.max_new_max));
        for (int64_t i = 0; i < s.count; ++i) {
            Request r;
            r.input_ids.resize(static_cast<size_t>(length(rng)));
            for (auto& t : r.input_ids) t = id(rng);
            r.params = merged_params(w, static_cast<size_t>(i), "{}");
            // Drawn after the prompt so that a workload without max_new_tokens keeps its prompts.
            if (s.max_new_min > 0) r.params.max_new_tokens = fresh(rng);
            out.push_back(std::move(r));
        }
    } else {
        for (size_t i = 0; i < w.requests.size(); ++i) {
            const WorkloadItem& item = w.requests[i];
            Request r;
            r.prompt = item.prompt;
            r.input_ids = item.input_ids;
            r.adapter = item.adapter;
            r.client_id = item.client_id;
            r.params = merged_params(w, i, item.params_json);
            out.push_back(std::move(r));
        }
    }
    for (size_t i = 0; i < out.size() && !w.adapters.empty(); ++i)
        if (out[i].adapter.empty()) out[i].adapter = w.adapters[i % w.adapters.size()];
    return out;
}

json arrival_json(const WorkloadArrival& a) {
    json out = {{"kind", to_string(a.kind)}};
    if (a.kind == ArrivalKind::Poisson) {
        out["rate"] = a.rate;
        out["seed"] = a.seed;
    } else if (a.kind == ArrivalKind::Bursts) {
        out["size"] = a.burst_size;
        out["interval_s"] = a.burst_interval_s;
    }
    return out;
}

}  // namespace

const char* to_string(ArrivalKind kind) {
    switch (kind) {
        case ArrivalKind::All: return "all";
        case ArrivalKind::Poisson: return "poisson";
        case ArrivalKind::Bursts: return "bursts";
    }
    return "all";
}

Workload read_workload(const std::string& path) { return parse_workload(read_text(path, "workload file"), path); }

Workload parse_workload(const std::string& text, const std::string& path) {
    const json d = parse_json(text, path);
    try {
        return parse_document(d, path);
    } catch (const json::exception& e) {
        // A field of the wrong type: name the file rather than surfacing a library message alone.
        throw Error(ErrorKind::Format, path, std::string("unexpected workload structure: ") + e.what());
    }
}

Workload read_jsonl_prompts(const std::string& path) { return parse_jsonl_prompts(read_text(path, "prompts file"), path); }

Workload parse_jsonl_prompts(const std::string& text, const std::string& path) {
    Workload w;
    w.path = path;
    w.name = path;
    std::istringstream lines(text);
    std::string line;
    int number_of_line = 0;
    while (std::getline(lines, line)) {
        ++number_of_line;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(number_of_line);
        const json item = parse_json(line, where);
        try {
            w.requests.push_back(parse_item(item, where));
        } catch (const json::exception& e) {
            throw Error(ErrorKind::Format, where, std::string("unexpected request structure: ") + e.what());
        }
    }
    if (w.requests.empty()) throw Error(ErrorKind::InvalidArgument, path, "no prompts in the file");
    return w;
}

std::string arrival_to_json(const WorkloadArrival& arrival) { return arrival_json(arrival).dump(); }

std::string workload_to_json(const Workload& w) {
    json d = {{"name", w.name}, {"arrival", arrival_json(w.arrival)}, {"params", json::parse(w.params_json)}};
    if (!w.params_mix.empty()) {
        d["params_mix"] = json::array();
        for (const auto& p : w.params_mix) d["params_mix"].push_back(json::parse(p));
    }
    if (!w.adapters.empty()) d["adapters"] = w.adapters;
    if (w.synthetic) {
        const SyntheticWorkload& s = *w.synthetic;
        d["synthetic"] = {{"count", s.count}, {"prompt_tokens", {s.prompt_min, s.prompt_max}}, {"seed", s.seed}, {"min_id", s.min_id}};
        if (s.max_new_min > 0) d["synthetic"]["max_new_tokens"] = {s.max_new_min, s.max_new_max};
    } else {
        d["requests"] = json::array();
        for (const auto& r : w.requests) {
            json item = {{"adapter", r.adapter}, {"params", json::parse(r.params_json)}};
            if (r.prompt) item["prompt"] = *r.prompt;
            if (!r.input_ids.empty()) item["input_ids"] = r.input_ids;
            if (!r.client_id.empty()) item["id"] = r.client_id;
            d["requests"].push_back(std::move(item));
        }
    }
    return d.dump(2);
}

std::vector<Request> workload_requests(const Workload& workload, int64_t vocab) {
    try {
        return build_requests(workload, vocab);
    } catch (const json::exception& e) {
        throw Error(ErrorKind::Format, workload.path, std::string("unexpected workload structure: ") + e.what());
    }
}

std::vector<double> arrival_times_s(const WorkloadArrival& arrival, size_t count) {
    std::vector<double> out(count, 0.0);
    if (arrival.kind == ArrivalKind::Poisson) {
        std::mt19937_64 rng(arrival.seed);
        std::exponential_distribution<double> gap(arrival.rate);
        double t = 0;
        for (auto& v : out) v = t += gap(rng);
    } else if (arrival.kind == ArrivalKind::Bursts) {
        for (size_t i = 0; i < count; ++i)
            out[i] = static_cast<double>(i / static_cast<size_t>(arrival.burst_size)) * arrival.burst_interval_s;
    }
    return out;
}

}  // namespace lorascope
