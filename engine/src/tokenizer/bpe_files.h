// A BPE model as files describe it: tokenizer.json's "model" object (vocab, merges in either
// spelling, the options), and the vocab.json + merges.txt pair. Shared by the byte-level and the
// SentencePiece-style BPE tokenizers.
#pragma once

#include "tokenizer/bpe_model.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

std::unordered_map<std::string, int64_t> parse_bpe_vocab(const nlohmann::json& vocab, const std::string& path);
std::pair<std::string, std::string> split_merge(const std::string& line, const std::string& path, size_t index);

// tokenizer.json's BPE model. Error(Unsupported) naming path for options we do not implement
// (dropout, subword prefixes/suffixes, byte_fallback unless allowed).
std::unique_ptr<BpeModel> bpe_model_from_json(const nlohmann::json& model, const std::string& path, bool allow_byte_fallback);

}  // namespace lorascope::tokenizer
