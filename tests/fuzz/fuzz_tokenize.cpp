// Encode, decode and streaming detokenization on arbitrary bytes, for one tokenizer of every kind
// (tokenizer_zoo.h: SentencePiece Unigram and BPE with each converter, Llama 3 / Qwen2 splits and
// NFC, Marian's pair, the real tokenizers in $LORASCOPE_SHARED_TOKENIZERS when that folder exists).
// Input: byte 0 picks the tokenizer, byte 1 the flags (add special tokens, skip them, target text,
// a language code for tokenizers that take one), the rest is the text; the same rest read as
// 16-bit ids (some outside the vocabulary) is decoded and streamed.
#include <memory>

#include "fuzz_support.h"
#include "tokenizer_checks.h"
#include "tokenizer_zoo.h"

using namespace lorascope;

namespace {

std::vector<std::unique_ptr<Tokenizer>> load_all() {
    std::vector<std::unique_ptr<Tokenizer>> all;
    for (const std::string& dir : fuzz::tokenizer_zoo()) all.push_back(load_tokenizer(dir));
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto tokenizers = load_all();
    if (size < 2) return 0;
    const Tokenizer& tok = *tokenizers[data[0] % tokenizers.size()];
    const bool add_special = data[1] & 1, skip_special = data[1] & 2;
    const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
    EncodeOptions options;
    options.add_special_tokens = add_special;
    options.target = data[1] & 4;
    // Marian's codes are written in the text; mBART-50's and NLLB's are options (target text
    // needs one: the tokenizer's own tgt_lang may be unset).
    const auto& codes = tok.language_codes();
    if (((data[1] & 8) || options.target) && !codes.empty() && tok.kind() != TokenizerKind::SentencePiecePair) {
        const std::string& code = codes[static_cast<size_t>(data[1] >> 4) % codes.size()];
        (options.target ? options.tgt_lang : options.src_lang) = code;
    }
    fuzz::exercise_tokenizer(tok, text, options, skip_special);
    fuzz::check_round_trip(tok, text);
    std::vector<int64_t> ids;
    const int64_t span = tok.vocab_size() + 8;
    for (size_t i = 2; i + 1 < size; i += 2) ids.push_back(((data[i] << 8) | data[i + 1]) % span - 4);
    fuzz::check_decode_and_stream(tok, ids, skip_special);
    for (int64_t id : ids) (void)tok.id_to_token(id);
    return 0;
}
