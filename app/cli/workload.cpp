#include "workload.h"

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>

#include "lorascope/error.h"
#include "lorascope/params.h"

namespace lorascope::cli {

using nlohmann::json;

namespace {

// Far beyond any benchmark (W1-W5 use at most a few thousand requests of a few hundred tokens),
// and small enough to build under the fuzzer's 2 GB limit with ASan's overhead.
constexpr int64_t kMaxSyntheticRequests = 100'000;
constexpr int64_t kMaxSyntheticPromptTokens = 1 << 20;
constexpr int64_t kMaxSyntheticTokens = 50'000'000;  // 400 MB of prompt ids

// nlohmann converts a JSON float to an integer with a plain cast, undefined when it is out of range
// (an id written as 5e82): integers are checked as integers before they are read.
int64_t integer(const json& v, const std::string& what, const std::string& path) {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
        throw Error(ErrorKind::InvalidArgument, path, what + " must be an integer, not " + v.dump());
    return v.get<int64_t>();
}

int64_t integer_field(const json& object, const char* key, int64_t fallback, const std::string& path) {
    return object.contains(key) ? integer(object[key], std::string("synthetic ") + key, path) : fallback;
}

std::vector<Request> build_requests(const json& w, const std::string& path, int64_t vocab) {
    std::vector<Request> out;
    const json defaults = w.value("params", json::object());
    auto with_params = [&](Request r, const json& own) {
        json merged = defaults;
        for (const auto& item : own.items()) merged[item.key()] = item.value();
        r.params = parse_generation_params(merged.dump(), path + " params");
        return r;
    };
    if (w.contains("requests")) {
        for (const auto& item : w["requests"]) {
            Request r;
            if (item.contains("prompt")) r.prompt = item["prompt"].get<std::string>();
            if (item.contains("input_ids")) {
                if (!item["input_ids"].is_array())
                    throw Error(ErrorKind::InvalidArgument, path, "\"input_ids\" must be a list of integers");
                for (const auto& id : item["input_ids"]) r.input_ids.push_back(integer(id, "an input id", path));
            }
            r.adapter = item.value("adapter", std::string());
            out.push_back(with_params(std::move(r), item.value("params", json::object())));
        }
    } else if (w.contains("synthetic")) {
        const json& s = w["synthetic"];
        if (!s.is_object()) throw Error(ErrorKind::InvalidArgument, path, "\"synthetic\" must be an object");
        const int64_t count = integer_field(s, "count", 0, path);
        std::vector<int64_t> range{8, 128};
        if (s.contains("prompt_tokens")) {
            if (!s["prompt_tokens"].is_array())
                throw Error(ErrorKind::InvalidArgument, path, "synthetic prompt_tokens must be [min, max]");
            range.clear();
            for (const auto& n : s["prompt_tokens"]) range.push_back(integer(n, "synthetic prompt_tokens", path));
        }
        if (count <= 0 || range.size() != 2 || range[0] < 1 || range[1] < range[0])
            throw Error(ErrorKind::InvalidArgument, path, "synthetic needs count > 0 and prompt_tokens [min, max]");
        // The prompts are built before the run: bound what they may cost, so that a typo (an extra
        // digit) is a message rather than an allocation of petabytes.
        if (count > kMaxSyntheticRequests)
            throw Error(ErrorKind::InvalidArgument, path, "synthetic count " + std::to_string(count) +
                                                              " is beyond the limit of " + std::to_string(kMaxSyntheticRequests));
        if (range[1] > kMaxSyntheticPromptTokens)
            throw Error(ErrorKind::InvalidArgument, path, "synthetic prompt_tokens max " + std::to_string(range[1]) +
                                                              " is beyond the limit of " + std::to_string(kMaxSyntheticPromptTokens));
        if (count * range[1] > kMaxSyntheticTokens)
            throw Error(ErrorKind::InvalidArgument, path, "synthetic count x prompt_tokens max = " + std::to_string(count * range[1]) +
                                                              " prompt tokens, beyond the limit of " + std::to_string(kMaxSyntheticTokens));
        const int64_t min_id = integer_field(s, "min_id", 5, path);
        if (min_id < 0 || min_id >= vocab)
            throw Error(ErrorKind::InvalidArgument, path, "synthetic min_id " + std::to_string(min_id) +
                                                              " is outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
        std::mt19937_64 rng(static_cast<uint64_t>(integer_field(s, "seed", 0, path)));
        std::uniform_int_distribution<int64_t> length(range[0], range[1]);
        std::uniform_int_distribution<int64_t> id(min_id, vocab - 1);
        for (int64_t i = 0; i < count; ++i) {
            Request r;
            r.input_ids.resize(static_cast<size_t>(length(rng)));
            for (auto& t : r.input_ids) t = id(rng);
            out.push_back(with_params(std::move(r), json::object()));
        }
    } else {
        throw Error(ErrorKind::InvalidArgument, path, "a workload needs \"requests\" or \"synthetic\"");
    }
    if (w.contains("adapters")) {
        const auto names = w["adapters"].get<std::vector<std::string>>();
        for (size_t i = 0; i < out.size() && !names.empty(); ++i)
            if (out[i].adapter.empty()) out[i].adapter = names[i % names.size()];
    }
    return out;
}

}  // namespace

Workload read_workload(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error(ErrorKind::NotFound, path, "cannot open the workload file");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_workload(text.str(), path);
}

Workload parse_workload(const std::string& text, const std::string& path) {
    Workload w;
    w.path = path;
    try {
        w.document = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(ErrorKind::Format, path, std::string("malformed JSON: ") + e.what());
    }
    try {
        w.name = w.document.value("name", path);
        w.arrival = w.document.value("arrival", json{{"kind", "all"}});
        const std::string kind = w.arrival.value("kind", "all");
        if (kind != "all" && kind != "poisson")
            throw Error(ErrorKind::InvalidArgument, path, "arrival kind must be \"all\" or \"poisson\"");
        w.poisson = kind == "poisson";
        w.rate = w.arrival.value("rate", 1.0);
        if (w.poisson && w.rate <= 0)
            throw Error(ErrorKind::InvalidArgument, path, "poisson arrival needs rate > 0");
        if (w.arrival.is_object() && w.arrival.contains("seed"))
            w.seed = static_cast<uint64_t>(integer(w.arrival["seed"], "arrival seed", path));
    } catch (const json::exception& e) {
        throw Error(ErrorKind::Format, path, std::string("unexpected workload structure: ") + e.what());
    }
    return w;
}

std::vector<Request> workload_requests(const Workload& workload, int64_t vocab) {
    try {
        return build_requests(workload.document, workload.path, vocab);
    } catch (const json::exception& e) {
        // A field of the wrong type: name the file rather than surfacing a library message alone.
        throw Error(ErrorKind::Format, workload.path, std::string("unexpected workload structure: ") + e.what());
    }
}

}  // namespace lorascope::cli
