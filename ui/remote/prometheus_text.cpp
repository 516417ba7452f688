#include "remote/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace lorascope::ui::prometheus {

namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool blank(char c) { return c == ' ' || c == '\t'; }

// A cursor over one line; every reader leaves it after what it read.
struct Line {
    std::string_view s;
    size_t i = 0;

    bool done() const { return i >= s.size(); }
    char peek() const { return done() ? '\0' : s[i]; }
    void skipBlanks() {
        while (!done() && blank(s[i])) ++i;
    }
    // A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*); labels take the same minus ':' (checked by the caller).
    std::string name() {
        const size_t start = i;
        if (done() || !name_start(s[i])) return {};
        while (!done() && name_char(s[i])) ++i;
        return std::string(s.substr(start, i - start));
    }
    std::string token() {
        const size_t start = i;
        while (!done() && !blank(s[i])) ++i;
        return std::string(s.substr(start, i - start));
    }
};

// A label value between double quotes, with \\, \" and \n resolved; false when the closing quote
// is missing or an escape is unknown.
bool quoted(Line& l, std::string& out, std::string& why) {
    if (l.peek() != '"') {
        why = "a label value must be in double quotes";
        return false;
    }
    ++l.i;
    while (!l.done()) {
        const char c = l.s[l.i++];
        if (c == '"') return true;
        if (c != '\\') {
            out += c;
            continue;
        }
        if (l.done()) break;
        const char e = l.s[l.i++];
        if (e == '\\') out += '\\';
        else if (e == '"') out += '"';
        else if (e == 'n') out += '\n';
        else {
            why = std::string("unknown escape \\") + e + " in a label value";
            return false;
        }
    }
    why = "a label value has no closing quote";
    return false;
}

bool labels(Line& l, Labels& out, std::string& why) {
    ++l.i;   // '{'
    for (;;) {
        l.skipBlanks();
        if (l.peek() == '}') {
            ++l.i;
            return true;
        }
        std::string key = l.name();
        if (key.empty() || key.find(':') != std::string::npos) {
            why = "a label name is missing or invalid";
            return false;
        }
        l.skipBlanks();
        if (l.peek() != '=') {
            why = "label " + key + " has no '='";
            return false;
        }
        ++l.i;
        l.skipBlanks();
        std::string value;
        if (!quoted(l, value, why)) return false;
        for (const auto& [k, v] : out)
            if (k == key) {
                why = "label " + key + " is given twice";
                return false;
            }
        out.emplace_back(std::move(key), std::move(value));
        l.skipBlanks();
        if (l.peek() == ',') {
            ++l.i;
            continue;
        }
        if (l.peek() == '}') continue;
        why = "labels must be separated by ',' and closed by '}'";
        return false;
    }
}

std::string unescape_help(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
            out += s[i + 1] == 'n' ? '\n' : '\\';
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

// "# HELP name text" and "# TYPE name type"; other comments are ignored. Returns false (with
// `why`) for a HELP or TYPE line that is malformed.
bool comment(std::string_view text, Exposition& e, std::string& why) {
    Line l{text, 1};
    l.skipBlanks();
    const std::string keyword = l.token();
    if (keyword != "HELP" && keyword != "TYPE") return true;
    l.skipBlanks();
    const std::string name = l.name();
    if (name.empty() || (!l.done() && !blank(l.peek()))) {
        why = "# " + keyword + " needs a metric name";
        return false;
    }
    l.skipBlanks();
    const std::string_view rest = l.s.substr(std::min(l.i, l.s.size()));
    if (keyword == "HELP") {
        e.help[name] = unescape_help(rest);
        return true;
    }
    static const std::map<std::string_view, Type> kTypes = {{"counter", Type::Counter}, {"gauge", Type::Gauge},
                                                             {"histogram", Type::Histogram}, {"summary", Type::Summary},
                                                             {"untyped", Type::Untyped}};
    const auto it = kTypes.find(rest);
    if (it == kTypes.end()) {
        why = "unknown metric type '" + std::string(rest) + "' for " + name;
        return false;
    }
    e.types[name] = it->second;
    return true;
}

bool sample(std::string_view text, Sample& out, std::string& why) {
    Line l{text, 0};
    out.name = l.name();
    if (out.name.empty()) {
        why = "a sample must start with a metric name";
        return false;
    }
    l.skipBlanks();
    if (l.peek() == '{' && !labels(l, out.labels, why)) return false;
    l.skipBlanks();
    const std::string value = l.token();
    const auto v = parseValue(value);
    if (!v) {
        why = value.empty() ? "no value after " + out.name : "'" + value + "' is not a number";
        return false;
    }
    out.value = *v;
    l.skipBlanks();
    if (!l.done()) {
        const std::string ts = l.token();
        char* end = nullptr;
        errno = 0;
        const long long t = std::strtoll(ts.c_str(), &end, 10);
        if (errno != 0 || end == ts.c_str() || *end != '\0') {
            why = "'" + ts + "' is not a timestamp in milliseconds";
            return false;
        }
        out.timestamp_ms = t;
        l.skipBlanks();
        if (!l.done()) {
            why = "unexpected text after the timestamp";
            return false;
        }
    }
    return true;
}

std::string_view family_of(std::string_view name) {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"})
        if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
            return name.substr(0, name.size() - suffix.size());
    return name;
}

}  // namespace

std::optional<double> parseValue(std::string_view text) {
    // Go's strconv.ParseFloat, which Prometheus uses, takes the special values in any case.
    std::string lower;
    for (char c : text) lower += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (lower == "inf" || lower == "+inf" || lower == "infinity" || lower == "+infinity")
        return std::numeric_limits<double>::infinity();
    if (lower == "-inf" || lower == "-infinity") return -std::numeric_limits<double>::infinity();
    if (text.empty()) return std::nullopt;
    // Decimal forms only, read without the C locale's decimal separator (Qt sets the user's locale,
    // under which strtod would stop at the '.' of "0.5").
    for (char c : text)
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return std::nullopt;
    std::string_view digits = text;
    if (digits.front() == '+') digits.remove_prefix(1);   // from_chars takes '-' only
    if (digits.empty() || digits.front() == '+') return std::nullopt;
    double v = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, std::chars_format::general);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return v;
}

const std::string* Sample::label(std::string_view key) const {
    for (const auto& [k, v] : labels)
        if (k == key) return &v;
    return nullptr;
}

bool Sample::hasLabels(const Labels& match) const {
    for (const auto& [k, v] : match) {
        const std::string* have = label(k);
        if (!have || *have != v) return false;
    }
    return true;
}

std::optional<double> Exposition::value(std::string_view name, const Labels& match) const {
    for (const Sample& s : samples)
        if (s.name == name && s.hasLabels(match)) return s.value;
    return std::nullopt;
}

std::optional<double> Exposition::sum(std::string_view name, const Labels& match) const {
    std::optional<double> total;
    for (const Sample& s : samples)
        if (s.name == name && s.hasLabels(match)) total = total.value_or(0.0) + s.value;
    return total;
}

std::optional<double> Exposition::max(std::string_view name, const Labels& match) const {
    std::optional<double> best;
    for (const Sample& s : samples)
        if (s.name == name && s.hasLabels(match) && (!best || s.value > *best)) best = s.value;
    return best;
}

std::optional<Totals> Exposition::totals(std::string_view name, const Labels& match) const {
    const std::string base(name);
    const auto sum_v = sum(base + "_sum", match);
    const auto count_v = sum(base + "_count", match);
    if (!sum_v || !count_v) return std::nullopt;
    return Totals{*sum_v, *count_v};
}

std::vector<std::pair<double, double>> Exposition::buckets(std::string_view name, const Labels& match) const {
    const std::string bucket = std::string(name) + "_bucket";
    std::vector<std::pair<double, double>> out;
    for (const Sample& s : samples) {
        if (s.name != bucket || !s.hasLabels(match)) continue;
        const std::string* le = s.label("le");
        if (!le) continue;
        if (const auto bound = parseValue(*le)) out.emplace_back(*bound, s.value);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Type Exposition::typeOf(std::string_view sample_name) const {
    // A histogram's _bucket, _sum and _count samples belong to the family its # TYPE line names.
    for (std::string_view name : {sample_name, family_of(sample_name)}) {
        const auto it = types.find(std::string(name));
        if (it != types.end()) return it->second;
    }
    return Type::Untyped;
}

bool Exposition::hasPrefix(std::string_view prefix) const {
    for (const Sample& s : samples)
        if (std::string_view(s.name).substr(0, prefix.size()) == prefix) return true;
    return false;
}

Exposition parse(std::string_view text) {
    Exposition e;
    size_t start = 0;
    int number = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        size_t first = 0;
        while (first < line.size() && blank(line[first])) ++first;
        line.remove_prefix(first);
        if (line.empty()) {
            if (end == text.size()) break;
            continue;
        }
        std::string why;
        bool ok;
        if (line.front() == '#') {
            ok = comment(line, e, why);
        } else {
            Sample s;
            ok = sample(line, s, why);
            if (ok) e.samples.push_back(std::move(s));
        }
        if (!ok) {
            ++e.skipped_lines;
            if (e.problems.size() < 20) e.problems.push_back("line " + std::to_string(number) + ": " + why);
        }
        if (end == text.size()) break;
    }
    return e;
}

}  // namespace lorascope::ui::prometheus
