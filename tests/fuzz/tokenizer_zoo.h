// One tokenizer directory of every kind, written at fuzzer start-up from files committed in the
// repository: the demo pack's T5 / BART / BLOOM tokenizers, the BLOOM tokenizer.json re-pointed at
// the Llama 3 and Qwen2 Split patterns (Qwen2's with its NFC normalizer), and the SentencePiece
// models of the spiece_model seeds (trained by tests/oracle/spm_model_oracle.py) under each model
// file name and tokenizer class we convert: Llama's tokenizer.model, NLLB's and mBART-50's
// sentencepiece.bpe.model, Pegasus's spiece.model, and a Marian source.spm / target.spm pair with
// a joint vocab.json and with separate vocabularies. The real tokenizers in
// $LORASCOPE_SHARED_TOKENIZERS join when present.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "tokenizer/spm_model_file.h"
#include "tokenizer/split_patterns.h"

namespace lorascope::fuzz {

inline std::string read_source_file(const std::string& relative) {
    std::ifstream in(std::string(LORASCOPE_FUZZ_SOURCE_DIR) + "/" + relative, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", relative.c_str());
        std::abort();
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// A directory under the scratch directory holding `files` (name -> bytes).
inline std::string zoo_dir(const std::string& name, const std::map<std::string, std::string>& files) {
    const std::string dir = scratch_dir() + "/" + name;
    std::filesystem::create_directories(dir);
    for (const auto& [file, bytes] : files) {
        std::ofstream out(dir + "/" + file, std::ios::binary);
        out << bytes;
    }
    return dir;
}

// The demo BLOOM tokenizer.json with a Split pre-tokenizer of `pattern` (and NFC for Qwen2).
inline std::string byte_level_with_split(tokenizer::SplitPattern pattern, bool nfc) {
    nlohmann::json json = nlohmann::json::parse(read_source_file("resources/demo/bloom/tokenizer.json"));
    json["pre_tokenizer"] = {{"type", "Sequence"},
                             {"pretokenizers",
                              {{{"type", "Split"}, {"pattern", {{"Regex", tokenizer::split_pattern_regex(pattern)}}},
                                {"behavior", "Isolated"}, {"invert", false}},
                               {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
    if (nfc) json["normalizer"] = {{"type", "NFC"}};
    return json.dump();
}

// Marian's joint vocabulary: </s>, <unk>, the pieces of both models, language codes, <pad> last.
inline std::string marian_vocab(const std::vector<std::string>& models) {
    nlohmann::ordered_json vocab = {{"</s>", 0}, {"<unk>", 1}};
    for (const std::string& bytes : models)
        for (const auto& [piece, score] : tokenizer::SpmModelFile::parse(bytes, "seed").pieces)
            if (!vocab.contains(piece)) vocab[piece] = vocab.size();
    for (const char* code : {">>fra<<", ">>deu<<"}) vocab[code] = vocab.size();
    vocab["<pad>"] = vocab.size();
    return vocab.dump();
}

inline std::vector<std::string> tokenizer_zoo() {
    std::vector<std::string> dirs;
    const std::string demo = std::string(LORASCOPE_FUZZ_SOURCE_DIR) + "/resources/demo";
    for (const char* model : {"t5", "bart", "bloom"}) dirs.push_back(demo + "/" + model);
    auto demo_file = [&](const char* model, const char* file) { return read_source_file(std::string("resources/demo/") + model + "/" + file); };
    // BART's vocab.json + merges.txt without its tokenizer.json: the other byte-level BPE loader.
    dirs.push_back(zoo_dir("bart_vocab_merges", {{"vocab.json", demo_file("bart", "vocab.json")},
                                                 {"merges.txt", demo_file("bart", "merges.txt")},
                                                 {"tokenizer_config.json", demo_file("bart", "tokenizer_config.json")},
                                                 {"special_tokens_map.json", demo_file("bart", "special_tokens_map.json")}}));
    dirs.push_back(zoo_dir("llama3_split", {{"tokenizer.json", byte_level_with_split(tokenizer::SplitPattern::Llama3, false)}}));
    dirs.push_back(zoo_dir("qwen2_split", {{"tokenizer.json", byte_level_with_split(tokenizer::SplitPattern::Qwen2, true)},
                                           {"tokenizer_config.json", R"({"tokenizer_class": "Qwen2Tokenizer", "bos_token": null})"}}));
    const std::string bpe = read_source_file("tests/fuzz/corpus/spiece_model/seed-bpe");
    const std::string unigram = read_source_file("tests/fuzz/corpus/spiece_model/seed-unigram_bytes");
    const std::string tiny = read_source_file("tests/fuzz/corpus/spiece_model/seed-tiny");
    dirs.push_back(zoo_dir("llama_model", {{"tokenizer.model", bpe},
                                           {"tokenizer_config.json", R"({"tokenizer_class": "LlamaTokenizer", "legacy": false,
                                                                         "add_prefix_space": true, "add_eos_token": true})"}}));
    dirs.push_back(zoo_dir("llama_bare", {{"tokenizer.model", bpe}}));
    dirs.push_back(zoo_dir("nllb_model", {{"sentencepiece.bpe.model", bpe},
                                          {"tokenizer_config.json", R"({"tokenizer_class": "NllbTokenizer", "src_lang": "fra_Latn"})"}}));
    dirs.push_back(zoo_dir("mbart50_model", {{"sentencepiece.bpe.model", unigram},
                                             {"tokenizer_config.json", R"({"tokenizer_class": "MBart50Tokenizer", "tgt_lang": "de_DE"})"}}));
    dirs.push_back(zoo_dir("pegasus_model", {{"spiece.model", unigram}, {"tokenizer_config.json", R"({"tokenizer_class": "PegasusTokenizer"})"}}));
    dirs.push_back(zoo_dir("marian", {{"source.spm", unigram}, {"target.spm", tiny}, {"vocab.json", marian_vocab({unigram, tiny})},
                                      {"tokenizer_config.json", R"({"tokenizer_class": "MarianTokenizer"})"}}));
    // separate_vocabs: target_vocab.json holds target.spm's pieces, source ids may run past it.
    dirs.push_back(zoo_dir("marian_separate", {{"source.spm", unigram}, {"target.spm", tiny}, {"vocab.json", marian_vocab({unigram})},
                                               {"target_vocab.json", marian_vocab({tiny})},
                                               {"tokenizer_config.json", R"({"tokenizer_class": "MarianTokenizer", "separate_vocabs": true})"}}));
    if (const char* shared = std::getenv("LORASCOPE_SHARED_TOKENIZERS"); shared && *shared) {
        for (const char* name : {"t5", "bart", "gpt2"}) {
            const std::string dir = std::string(shared) + "/" + name;
            if (dir_exists(dir)) dirs.push_back(dir);
        }
        const std::string mistral = std::string(shared) + "/mistral/tokenizer.model.v3";
        if (std::ifstream(mistral).good()) {
            const std::string dir = zoo_dir("mistral_v3", {{"tokenizer_config.json", R"({"tokenizer_class": "LlamaTokenizer", "legacy": false})"}});
            std::filesystem::remove(dir + "/tokenizer.model");
            std::filesystem::create_symlink(mistral, dir + "/tokenizer.model");
            dirs.push_back(dir);
        }
    }
    return dirs;
}

}  // namespace lorascope::fuzz
