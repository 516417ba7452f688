#include "jsonl_io.h"

#include <fstream>
#include <iostream>
#include <sys/stat.h>

#include "lorascope/error.h"
#include "lorascope/json_input.h"

namespace lorascope::cli {

namespace {

bool file_exists(const std::string& path) {
    struct stat st{};
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::vector<JsonLine> read_json_lines(const std::string& path) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (path != "-") {
        file.open(path);
        if (!file) throw Error(ErrorKind::NotFound, path, "cannot open the input file");
        in = &file;
    }
    std::vector<JsonLine> lines;
    std::string text;
    size_t number = 0;
    while (std::getline(*in, text)) {
        ++number;
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        JsonLine line;
        line.line_number = number;
        try {
            // Bounded nesting (lorascope/json_input.h); a NUL byte or 1e309 is refused there too.
            nlohmann::json value = parse_json_input(text, "line " + std::to_string(number));
            if (value.is_object()) line.value = std::move(value);
            else line.parse_error = "line " + std::to_string(number) + " is not a JSON object";
        } catch (const Error& e) {
            line.parse_error = "line " + std::to_string(number) + " is not valid JSON: " + e.message();
        }
        lines.push_back(std::move(line));
    }
    return lines;
}

JsonLineWriter::JsonLineWriter(const std::string& path) {
    if (path == "-") {
        file_ = stdout;
        return;
    }
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) throw Error(ErrorKind::NotFound, path, "cannot open the output file for writing");
    owned_ = true;
}

JsonLineWriter::~JsonLineWriter() {
    if (owned_) std::fclose(file_);
}

void JsonLineWriter::write(const nlohmann::json& object) {
    write_line(object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void JsonLineWriter::write_line(const std::string& json_text) {
    const std::string text = json_text + "\n";
    std::fwrite(text.data(), 1, text.size(), file_);
    std::fflush(file_);
}

std::unique_ptr<Tokenizer> load_tokenizer_if_present(const std::string& dir) {
    for (const char* name : {"tokenizer.json", "spiece.model", "vocab.json"})
        if (file_exists(dir + "/" + name)) return load_tokenizer(dir);
    return nullptr;
}

std::vector<int64_t> read_ids(const nlohmann::json& request, const char* field, int64_t vocab, const std::string& source,
                              int64_t lowest) {
    const auto& value = request.at(field);
    if (!value.is_array())
        throw Error(ErrorKind::InvalidArgument, source, std::string("\"") + field + "\" must be a list of token ids");
    std::vector<int64_t> ids;
    for (const auto& item : value) {
        if (!item.is_number_integer())
            throw Error(ErrorKind::InvalidArgument, source, std::string("\"") + field + "\" holds a non-integer");
        const int64_t id = item.get<int64_t>();
        if (id < lowest || id >= vocab)
            throw Error(ErrorKind::InvalidArgument, source,
                        std::string("\"") + field + "\" holds " + std::to_string(id) + ", outside the vocabulary of " +
                            std::to_string(vocab));
        ids.push_back(id);
    }
    return ids;
}

}  // namespace lorascope::cli
