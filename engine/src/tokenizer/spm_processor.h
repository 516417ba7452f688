// What the sentencepiece library itself does with a Unigram model file, for transformers' slow
// tokenizers that call it (MarianTokenizer): its normalizer (the charsmap by longest prefix,
// user-defined symbols kept as they are, extra whitespace removed, the dummy prefix, spaces as
// U+2581), SentencePiece's Unigram search (unigram_model.h), unknown stretches fused and returned
// as their own text, and DecodePieces. Not libsentencepiece: see spm_model_file.h.
#pragma once

#include "tokenizer/precompiled_normalizer.h"
#include "tokenizer/spm_model_file.h"
#include "tokenizer/unigram_model.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::tokenizer {

class SpmProcessor {
public:
    // Error(Unsupported) naming path for models other than Unigram, or with a denormalizer.
    explicit SpmProcessor(const std::string& path);

    std::string normalize(std::string_view text) const;
    // encode(text, out_type=str): the pieces, an unknown stretch as its normalized text (or byte
    // pieces with byte_fallback).
    std::vector<std::string> encode(std::string_view text) const;

    // DecodePieces, one piece at a time: control pieces vanish, the unknown piece reads " ⁇ ",
    // a string that is no piece reads as itself, leading spaces go as the model's normalizer
    // implies, and a run of byte pieces becomes UTF-8 (U+FFFD per byte that is not).
    struct DecodeState {
        bool is_bos_ws = true;     // a leading U+2581 may still be dropped
        bool bos_ws_seen = false;  // the last piece dropped one
        bool text_empty = true;
        std::string bytes;         // a run of byte pieces
    };
    void decode_piece(DecodeState& state, const std::string& piece, std::string& out) const;
    void decode_finish(DecodeState& state, std::string& out) const;

    const SpmModelFile& file() const { return file_; }

private:
    std::pair<std::string_view, size_t> normalize_prefix(std::string_view input) const;
    std::optional<int64_t> piece_id(const std::string& piece) const;

    SpmModelFile file_;
    std::unique_ptr<UnigramModel> model_;
    std::unique_ptr<PrecompiledNormalizer> charsmap_;
    std::vector<std::string> user_defined_;
};

}  // namespace lorascope::tokenizer
