#include "args.h"

#include <algorithm>
#include <cmath>

#include "lorascope/error.h"

namespace lorascope::cli {

Args::Args(int argc, char** argv, int first, const std::vector<std::string>& flags) {
    for (int i = first; i < argc; ++i) {
        std::string token = argv[i];
        if (token.rfind("--", 0) != 0 || token == "--") {
            positional_.push_back(token);
            continue;
        }
        std::string key = token.substr(2);
        std::string value;
        const auto eq = key.find('=');
        if (eq != std::string::npos) {
            value = key.substr(eq + 1);
            key = key.substr(0, eq);
        } else if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
            value = "1";
        } else {
            if (i + 1 >= argc)
                throw Error(ErrorKind::InvalidArgument, "option --" + key + " needs a value");
            value = argv[++i];
        }
        values_.emplace(key, value);
        order_.push_back(key);
    }
}

bool Args::has(const std::string& key) const { return values_.count(key) > 0; }

std::optional<std::string> Args::get(const std::string& key) const {
    auto range = values_.equal_range(key);
    if (range.first == range.second) return std::nullopt;
    auto last = range.second;
    --last;
    return last->second;
}

std::string Args::get_or(const std::string& key, const std::string& fallback) const {
    auto v = get(key);
    return v ? *v : fallback;
}

std::string Args::require(const std::string& key) const {
    auto v = get(key);
    if (!v || v->empty()) throw Error(ErrorKind::InvalidArgument, "missing required option --" + key);
    return *v;
}

std::vector<std::string> Args::all(const std::string& key) const {
    std::vector<std::string> out;
    auto range = values_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
    return out;
}

long long Args::get_int(const std::string& key, long long fallback) const {
    auto v = get(key);
    if (!v) return fallback;
    try {
        size_t used = 0;
        long long n = std::stoll(*v, &used);
        if (used != v->size()) throw std::invalid_argument("trailing characters");
        return n;
    } catch (const std::exception&) {
        throw Error(ErrorKind::InvalidArgument, "option --" + key + " expects an integer, got '" + *v + "'");
    }
}

double Args::get_double(const std::string& key, double fallback) const {
    auto v = get(key);
    if (!v) return fallback;
    try {
        size_t used = 0;
        const double x = std::stod(*v, &used);
        if (used != v->size() || !std::isfinite(x)) throw std::invalid_argument("not a finite number");
        return x;
    } catch (const std::exception&) {
        throw Error(ErrorKind::InvalidArgument, "option --" + key + " expects a number, got '" + *v + "'");
    }
}

void Args::allow_only(const std::vector<std::string>& known) const {
    for (const auto& key : order_) {
        if (std::find(known.begin(), known.end(), key) != known.end()) continue;
        std::vector<std::string> sorted = known;
        std::sort(sorted.begin(), sorted.end());
        std::string list;
        for (const auto& k : sorted) list += (list.empty() ? "--" : ", --") + k;
        throw Error(ErrorKind::InvalidArgument, "unknown option --" + key + " (this command takes " + list + ")");
    }
}

}  // namespace lorascope::cli
