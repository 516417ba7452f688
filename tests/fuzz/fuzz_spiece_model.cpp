// A downloaded spiece.model (SentencePiece's ModelProto, read by our own protobuf reader): a model
// that loads must then encode and decode through the SentencePiece pipeline.
#include "fuzz_support.h"
#include "tokenizer/spm_model_file.h"
#include "tokenizer_checks.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::string path = fuzz::write_file("spiece.model", bytes);
    LORASCOPE_FUZZ_PARSE({
        const auto model = tokenizer::SpmModelFile::parse(bytes, path);
        if (model.pieces.size() != model.types.size()) std::abort();
        const auto tok = load_tokenizer(fuzz::scratch_dir());
        fuzz::exercise_tokenizer(*tok, "Hello  world, it's 2024!\tcaf\xC3\xA9 \xEF\xBC\xA1 </s> <extra_id_0>", true, true);
        std::vector<int64_t> ids;
        for (int64_t id = -2; id < 300 && id < tok->vocab_size() + 2; ++id) ids.push_back(id);
        fuzz::check_decode_and_stream(*tok, ids, false);
    });
    return 0;
}
