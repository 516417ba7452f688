// Prometheus' text exposition format (version 0.0.4), as servers answer GET /metrics: what the
// batching inspector reads from a LoRAX or vLLM server. A line that is not valid is skipped and
// named in `problems` (with its line number); the rest of the exposition is still read. Plain C++,
// no Qt: the format is the whole concern here.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lorascope::ui::prometheus {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
    std::string name;                     // with its suffix: lorax_x_bucket, lorax_x_sum, ...
    Labels labels;                        // in the order written, escapes resolved
    double value = 0;                     // NaN, +Inf and -Inf as written
    std::optional<long long> timestamp_ms;

    const std::string* label(std::string_view key) const;
    // Every label of `match` is present with that value (an empty match matches every sample).
    bool hasLabels(const Labels& match) const;
};

enum class Type { Untyped, Counter, Gauge, Histogram, Summary };

// A histogram's or a summary's running totals (its _sum and _count samples).
struct Totals {
    double sum = 0;
    double count = 0;
};

struct Exposition {
    std::vector<Sample> samples;
    std::map<std::string, Type> types;         // from # TYPE lines, by family name
    std::map<std::string, std::string> help;   // from # HELP lines, escapes resolved
    std::vector<std::string> problems;         // "line 12: ...", one per skipped line
    int skipped_lines = 0;

    // The first sample called `name` whose labels include `match`.
    std::optional<double> value(std::string_view name, const Labels& match = {}) const;
    // The sum over every sample called `name` whose labels include `match` (a gauge reported per
    // model, say); nullopt when there is none.
    std::optional<double> sum(std::string_view name, const Labels& match = {}) const;
    // The largest such value; nullopt when there is none.
    std::optional<double> max(std::string_view name, const Labels& match = {}) const;
    // name_sum and name_count added over the series whose labels include `match`; nullopt unless
    // both are present.
    std::optional<Totals> totals(std::string_view name, const Labels& match = {}) const;
    // A histogram's cumulative buckets (le, count), sorted by le, +Inf last.
    std::vector<std::pair<double, double>> buckets(std::string_view name, const Labels& match = {}) const;
    // The # TYPE of a sample's family (lorax_x_bucket: lorax_x's); Untyped when none was given.
    Type typeOf(std::string_view sample_name) const;
    // Whether any sample's name starts with `prefix`.
    bool hasPrefix(std::string_view prefix) const;
};

Exposition parse(std::string_view text);

// "NaN", "+Inf", "-Inf", "Inf" (any case) or a decimal/exponent number, as Prometheus reads
// them; nullopt for anything else.
std::optional<double> parseValue(std::string_view text);

}  // namespace lorascope::ui::prometheus
