// spiece.model read through the dlopen'ed lorascope_spm module (SentencePiece validates and parses
// the file; the few ModelProto fields its API does not expose are read from its serialization).
// Module search order: $LORASCOPE_SPM_SHIM, the build directory, <executable dir>/../lib/lorascope,
// then the install libdir.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lorascope::tokenizer {

struct SpmModelFile {
    enum PieceType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

    std::vector<std::pair<std::string, double>> pieces;  // piece and score (float widened)
    std::vector<int> types;
    int unk_id = -1;
    int model_type = 1;                // TrainerSpec.model_type: 1 Unigram, 2 BPE
    bool byte_fallback = false;
    std::string precompiled_charsmap;  // NormalizerSpec.precompiled_charsmap
    std::string module_path;           // where the module was loaded from

    // Throws Error(NotFound) when the module cannot be found or loaded, Error(Format) naming
    // path when SentencePiece rejects the file.
    static SpmModelFile load(const std::string& path);
};

}  // namespace lorascope::tokenizer
