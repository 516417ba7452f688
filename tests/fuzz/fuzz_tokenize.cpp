// Encode, decode and streaming detokenization on arbitrary bytes, for each tokenizer kind: the demo
// pack's SentencePiece (T5), byte-level BPE from tokenizer.json (BART, BLOOM) and from vocab.json +
// merges.txt (BART), plus the real tokenizers in $LORASCOPE_SHARED_TOKENIZERS (t5, bart, gpt2) when
// that folder exists. Input: byte 0 picks the tokenizer, byte 1 the flags, the rest is the text;
// the same rest read as 16-bit ids (some outside the vocabulary) is decoded and streamed.
#include <cstdlib>
#include <memory>

#include "fuzz_support.h"
#include "tokenizer_checks.h"

using namespace lorascope;

namespace {

std::vector<std::unique_ptr<Tokenizer>> load_all() {
    std::vector<std::unique_ptr<Tokenizer>> all;
    const std::string demo = LORASCOPE_FUZZ_SOURCE_DIR "/resources/demo";
    for (const char* model : {"t5", "bart", "bloom"}) all.push_back(load_tokenizer(demo + "/" + model));
    // BART's vocab.json + merges.txt without its tokenizer.json: the other byte-level BPE loader.
    const std::string pair = fuzz::scratch_dir() + "/bart_vocab_merges";
    if (std::system(("mkdir -p '" + pair + "' && cp '" + demo + "/bart/vocab.json' '" + demo + "/bart/merges.txt' '" +
                     demo + "/bart/tokenizer_config.json' '" + demo + "/bart/special_tokens_map.json' '" + pair + "'")
                        .c_str()) != 0)
        std::abort();
    all.push_back(load_tokenizer(pair));
    if (const char* shared = std::getenv("LORASCOPE_SHARED_TOKENIZERS"); shared && *shared)
        for (const char* name : {"t5", "bart", "gpt2"}) {
            const std::string dir = std::string(shared) + "/" + name;
            if (fuzz::dir_exists(dir)) all.push_back(load_tokenizer(dir));
        }
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto tokenizers = load_all();
    if (size < 2) return 0;
    const Tokenizer& tok = *tokenizers[data[0] % tokenizers.size()];
    const bool add_special = data[1] & 1, skip_special = data[1] & 2;
    const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
    fuzz::exercise_tokenizer(tok, text, add_special, skip_special);
    std::vector<int64_t> ids;
    const int64_t span = tok.vocab_size() + 8;
    for (size_t i = 2; i + 1 < size; i += 2) ids.push_back(((data[i] << 8) | data[i + 1]) % span - 4);
    fuzz::check_decode_and_stream(tok, ids, skip_special);
    for (int64_t id : ids) (void)tok.id_to_token(id);
    return 0;
}
