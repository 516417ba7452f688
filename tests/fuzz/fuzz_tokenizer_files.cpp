// A downloaded tokenizer: tokenizer.json, tokenizer_config.json, vocab.json, merges.txt,
// tokenizer.model, sentencepiece.bpe.model, source.spm and target.spm (parts in that order; an
// empty or missing part means the file is absent, so an empty tokenizer.json part loads the
// model files or the vocab.json + merges.txt pair). A tokenizer that loads must then encode and
// decode, with a language code where it has them.
#include "fuzz_support.h"
#include "tokenizer_checks.h"

using namespace lorascope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<std::string> kFiles = {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                                                    "tokenizer.model", "sentencepiece.bpe.model", "source.spm", "target.spm"};
    const auto parts = fuzz::split_parts(data, size, kFiles.size());
    const std::string dir = fuzz::write_parts(parts, kFiles, true);
    LORASCOPE_FUZZ_PARSE({
        const auto tok = load_tokenizer(dir);
        (void)tok->describe();
        const std::string text = "Hello world, it's 2024! caf\xC3\xA9 \xE2\x96\x81 </s><s><pad> <mask> >>fra<< x";
        fuzz::exercise_tokenizer(*tok, text, true, false);
        EncodeOptions options;
        options.target = true;
        if (!tok->language_codes().empty() && tok->kind() != TokenizerKind::SentencePiecePair) {
            options.tgt_lang = tok->language_codes().back();
            fuzz::exercise_tokenizer(*tok, text, options, true);
        }
        std::vector<int64_t> ids;
        for (int64_t id = -2; id < 300 && id < tok->vocab_size() + 2; ++id) ids.push_back(id);
        fuzz::check_decode_and_stream(*tok, ids, false);
        fuzz::check_decode_and_stream(*tok, ids, true);
    });
    return 0;
}
