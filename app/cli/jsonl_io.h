// JSON Lines plumbing shared by the generate and score commands: `-` or a path for input and
// output, one request per line, per-line errors that never stop the other lines.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lorascope/tokenizer.h"

namespace lorascope::cli {

struct JsonLine {
    size_t line_number = 0;
    std::optional<nlohmann::json> value;  // absent when the line is not a JSON object
    std::string parse_error;
    std::string text;                     // the line as read (parse_request reads key order from it)
};

// Reads every non-empty line of `path` ("-" = stdin). Throws lorascope::Error when unreadable.
std::vector<JsonLine> read_json_lines(const std::string& path);

class JsonLineWriter {
public:
    explicit JsonLineWriter(const std::string& path);  // "-" = stdout
    ~JsonLineWriter();
    void write(const nlohmann::json& object);          // one line, flushed
    void write_line(const std::string& json_text);     // one line already serialised, flushed

private:
    FILE* file_ = nullptr;
    bool owned_ = false;
};

// The tokenizer of a model directory, or none when the directory holds no tokenizer files
// (tiny test checkpoints); malformed tokenizer files are still an error.
std::unique_ptr<Tokenizer> load_tokenizer_if_present(const std::string& dir);

// Reads a list of token ids from field `field` (error message names it). Values outside
// [lowest, vocab) are rejected.
// source names the request in errors ("line 3"), as parse_request's does.
std::vector<int64_t> read_ids(const nlohmann::json& request, const char* field, int64_t vocab, const std::string& source,
                              int64_t lowest = 0);

}  // namespace lorascope::cli
