// A downloaded tokenizer: tokenizer.json, tokenizer_config.json, vocab.json and merges.txt (parts in
// that order; an empty or missing part means the file is absent, so an empty tokenizer.json part
// loads the vocab.json + merges.txt pair). A tokenizer that loads must then encode and decode.
#include "fuzz_support.h"
#include "tokenizer_checks.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 4);
    const std::string dir =
        fuzz::write_parts(parts, {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"}, true);
    LORASCOPE_FUZZ_PARSE({
        const auto tok = load_tokenizer(dir);
        (void)tok->describe();
        fuzz::exercise_tokenizer(*tok, "Hello world, it's 2024! caf\xC3\xA9 \xE2\x96\x81 </s><s><pad> <mask>", true, false);
        std::vector<int64_t> ids;
        for (int64_t id = -2; id < 300 && id < tok->vocab_size() + 2; ++id) ids.push_back(id);
        fuzz::check_decode_and_stream(*tok, ids, false);
        fuzz::check_decode_and_stream(*tok, ids, true);
    });
    return 0;
}
