// A small command-line parser: `--key value`, `--key=value`, repeated keys, and flags.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lorascope::cli {

class Args {
public:
    // Options listed in `flags` take no value. Throws lorascope::Error on malformed input.
    Args(int argc, char** argv, int first, const std::vector<std::string>& flags = {});

    bool has(const std::string& key) const;
    std::optional<std::string> get(const std::string& key) const;       // last occurrence
    std::string get_or(const std::string& key, const std::string& fallback) const;
    std::string require(const std::string& key) const;                  // error names the option
    std::vector<std::string> all(const std::string& key) const;         // every occurrence
    long long get_int(const std::string& key, long long fallback) const;
    double get_double(const std::string& key, double fallback) const;   // finite numbers only
    const std::vector<std::string>& positional() const { return positional_; }
    // Rejects options not in `known` so that typos are errors, not silently ignored; the error lists
    // `known`, which is how a user (and test_cli_usage) learns what a command takes.
    void allow_only(const std::vector<std::string>& known) const;

private:
    std::multimap<std::string, std::string> values_;
    std::vector<std::string> order_;
    std::vector<std::string> positional_;
};

}  // namespace lorascope::cli
