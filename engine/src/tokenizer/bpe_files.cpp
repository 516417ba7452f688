#include "tokenizer/bpe_files.h"

#include "lorascope/error.h"

#include <nlohmann/json.hpp>

namespace lorascope::tokenizer {

std::unordered_map<std::string, int64_t> parse_bpe_vocab(const nlohmann::json& vocab, const std::string& path) {
    if (!vocab.is_object()) throw Error(ErrorKind::Format, path, "the BPE vocabulary is not a JSON object");
    std::unordered_map<std::string, int64_t> out;
    out.reserve(vocab.size());
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer()) throw Error(ErrorKind::Format, path, "vocabulary entry '" + token + "' has no integer id");
        out.emplace(token, id.get<int64_t>());
    }
    return out;
}

std::pair<std::string, std::string> split_merge(const std::string& line, const std::string& path, size_t index) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 >= line.size() || line.find(' ', space + 1) != std::string::npos)
        throw Error(ErrorKind::Format, path, "merge " + std::to_string(index) + " ('" + line + "') is not two tokens separated by a space");
    return {line.substr(0, space), line.substr(space + 1)};
}

std::unique_ptr<BpeModel> bpe_model_from_json(const nlohmann::json& model, const std::string& path, bool allow_byte_fallback) {
    auto non_empty = [&](const char* key) {
        return model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty();
    };
    if (non_empty("continuing_subword_prefix") || non_empty("end_of_word_suffix"))
        throw Error(ErrorKind::Unsupported, path, "BPE with continuing_subword_prefix/end_of_word_suffix is not supported");
    if (model.value("byte_fallback", false) && !allow_byte_fallback)
        throw Error(ErrorKind::Unsupported, path, "byte-level BPE with byte_fallback is not supported");
    if (model.contains("dropout") && !model["dropout"].is_null() && model["dropout"].get<double>() != 0.0)
        throw Error(ErrorKind::Unsupported, path, "BPE dropout is not supported");

    std::vector<std::pair<std::string, std::string>> merges;
    const auto& merges_json = model.at("merges");
    merges.reserve(merges_json.size());
    for (size_t i = 0; i < merges_json.size(); ++i) {
        const auto& m = merges_json[i];
        // tokenizers < 0.21 writes "a b"; newer releases write ["a", "b"].
        if (m.is_string()) merges.push_back(split_merge(m.get<std::string>(), path, i));
        else if (m.is_array() && m.size() == 2) merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        else throw Error(ErrorKind::Format, path, "merge " + std::to_string(i) + " is neither \"a b\" nor [a, b]");
    }
    auto vocab = parse_bpe_vocab(model.at("vocab"), path);
    BpeOptions options;
    options.ignore_merges = model.value("ignore_merges", false);
    options.fuse_unk = model.value("fuse_unk", false);
    options.byte_fallback = model.value("byte_fallback", false);
    // tokenizers only looks the unk_token up when a character is missing; a byte-level vocabulary
    // naming one it lacks still loads there, so it loads here (without an unknown token).
    if (model.contains("unk_token") && model["unk_token"].is_string() && vocab.count(model["unk_token"].get<std::string>()))
        options.unk_token = model["unk_token"].get<std::string>();
    return std::make_unique<BpeModel>(std::move(vocab), merges, path, std::move(options));
}

}  // namespace lorascope::tokenizer
