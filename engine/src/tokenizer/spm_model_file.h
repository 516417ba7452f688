// spiece.model (SentencePiece's ModelProto, protobuf wire format) read by our own strict reader.
// libsentencepiece is not used: it bundles a protobuf that clashes with libtorch's in one process,
// and encoding follows Hugging Face's pipeline in our own code anyway (unigram_model.h).
// Absent fields take the defaults declared in sentencepiece_model.proto; the checks SentencePiece
// makes when it loads a model (unique non-empty pieces, exactly one unknown piece, byte pieces only
// with byte_fallback) are made here too, plus checks the wire format alone cannot make (UTF-8
// pieces, a known field sent with the wrong wire type).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

// TrainerSpec: how the model was trained. Only what a reader may need is kept.
struct SpmTrainerSpec {
    enum ModelType { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };

    int model_type = Unigram;
    int32_t vocab_size = 8000;
    int32_t unk_id = 0;
    int32_t bos_id = 1;
    int32_t eos_id = 2;
    int32_t pad_id = -1;
    std::string unk_piece = "<unk>";
    std::string bos_piece = "<s>";
    std::string eos_piece = "</s>";
    std::string pad_piece = "<pad>";
    std::string unk_surface = " \xE2\x81\x87 ";  // " ⁇ "
    bool byte_fallback = false;
    bool treat_whitespace_as_suffix = false;
    bool allow_whitespace_only_pieces = false;
    bool split_digits = false;
    std::vector<std::string> control_symbols;
    std::vector<std::string> user_defined_symbols;
};

// NormalizerSpec (also the type of the optional denormalizer_spec).
struct SpmNormalizerSpec {
    std::string name;
    std::string precompiled_charsmap;  // bytes: trie size, double-array trie, normalized strings
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;
    bool escape_whitespaces = true;
    std::string normalization_rule_tsv;
};

struct SpmModelFile {
    enum PieceType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

    std::vector<std::pair<std::string, double>> pieces;  // piece and score (float widened exactly)
    std::vector<int> types;                              // PieceType per piece
    int unk_id = -1;                                     // the one piece of type Unknown
    SpmTrainerSpec trainer;
    SpmNormalizerSpec normalizer;
    std::optional<SpmNormalizerSpec> denormalizer;
    bool has_trainer_spec = false;
    bool has_normalizer_spec = false;

    // Reads and validates the file; every problem is Error(Format) naming path (NotFound when
    // the file cannot be opened).
    static SpmModelFile load(const std::string& path);
    // The same on bytes already in memory; path only names them in errors.
    static SpmModelFile parse(std::string_view bytes, const std::string& path);
};

}  // namespace lorascope::tokenizer
