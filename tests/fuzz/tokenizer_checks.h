// What every loaded tokenizer must do with any text and any ids (tests/fuzz): encode and decode
// without crashing, decode to valid UTF-8, stream exactly what decode() returns; and what the
// known tokenizers of fuzz_tokenize must do: give back the text they were given where their
// pipeline loses nothing (byte-level BPE; SentencePiece BPE with all byte-fallback tokens).
#pragma once

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "lorascope/tokenizer.h"
#include "tokenizer/nfc.h"
#include "tokenizer/unicode.h"

namespace lorascope::fuzz {

inline void fail_check(const char* what, const std::string& a, const std::string& b) {
    std::fprintf(stderr, "%s\n  got:      %s\n  expected: %s\n", what, a.c_str(), b.c_str());
    std::abort();
}

// Streaming detokenization of `ids` must concatenate to decode(ids, skip_special).
inline void check_decode_and_stream(const Tokenizer& tok, const std::vector<int64_t>& ids, bool skip_special) {
    const std::string decoded = tok.decode(ids, skip_special);
    if (tokenizer::utf8_lossy(decoded) != decoded) fail_check("decode() returned invalid UTF-8", decoded, decoded);
    StreamingDetokenizer stream(tok, skip_special);
    std::string streamed;
    for (int64_t id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    if (streamed != decoded) fail_check("streamed text differs from decode()", streamed, decoded);
}

// Whether the pipeline keeps every byte of text without '<' (no added token is matched, whose
// lstrip/rstrip may swallow spaces) and without U+2581 (SentencePiece's space): byte-level BPE, and
// SentencePiece BPE that has all 256 byte tokens, decodes them (ByteFallback), and gives "a b" back.
inline bool keeps_every_byte_uncached(const Tokenizer& tok) {
    if (tok.kind() == TokenizerKind::ByteLevelBpe) return true;
    if (tok.kind() != TokenizerKind::SentencePieceBpe || tok.describe().find("ByteFallback") == std::string::npos) return false;
    static const char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b)
        if (!tok.token_to_id(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">")) return false;
    return tok.decode(tok.encode("a b", false)) == "a b";
}

inline bool keeps_every_byte(const Tokenizer& tok) {
    static std::map<const Tokenizer*, bool> known;  // fuzz_tokenize's tokenizers live as long as the process
    auto it = known.find(&tok);
    if (it == known.end()) it = known.emplace(&tok, keeps_every_byte_uncached(tok)).first;
    return it->second;
}

// decode(encode(text)) == text, after the normalizer (NFC) and clean-up, where keeps_every_byte.
inline void check_round_trip(const Tokenizer& tok, const std::string& text) {
    if (text.find('<') != std::string::npos || text.find("\xE2\x96\x81") != std::string::npos ||
        tokenizer::utf8_lossy(text) != text || !keeps_every_byte(tok))
        return;
    const std::string description = tok.describe();
    std::string expected = description.find("NFC") != std::string::npos ? tokenizer::nfc(text) : text;
    // Metaspace "first" adds no U+2581 before text that starts with a space, and Strip then takes
    // that space away: Hugging Face's Llama tokenizers lose it too.
    if (description.find("Metaspace(first") != std::string::npos && description.find("Strip") != std::string::npos &&
        !expected.empty() && expected[0] == ' ')
        expected.erase(0, 1);
    if (tok.clean_up_tokenization_spaces()) expected = Tokenizer::clean_up_tokenization(expected);
    const std::string decoded = tok.decode(tok.encode(text, false));
    if (decoded != expected) fail_check("decode(encode(text)) lost text", decoded, expected);
}

inline void exercise_tokenizer(const Tokenizer& tok, const std::string& text, const EncodeOptions& options, bool skip_special) {
    const std::vector<int64_t> ids = tok.encode(text, options);
    // vocab_size() is Hugging Face's len(tokenizer): Marian's with separate vocabularies counts the
    // source side, which target text's ids may run past.
    const int64_t vocab = options.target && tok.kind() == TokenizerKind::SentencePiecePair ? INT64_MAX : tok.vocab_size();
    for (int64_t id : ids)
        if (id < 0 || id >= vocab) {
            std::fprintf(stderr, "encode() produced id %lld outside the vocabulary of %lld\n",
                         static_cast<long long>(id), static_cast<long long>(vocab));
            std::abort();
        }
    check_decode_and_stream(tok, ids, skip_special);
    // The same ids shown after a context (a decoder-only model's prompt): must not crash.
    if (ids.size() > 1) {
        StreamingDetokenizer stream(tok, skip_special, std::vector<int64_t>(ids.begin(), ids.begin() + ids.size() / 2));
        for (size_t i = ids.size() / 2; i < ids.size(); ++i) (void)stream.push(ids[i]);
        (void)stream.finish();
    }
    (void)tok.token_to_id(text);
    for (const std::string& code : tok.language_codes()) (void)tok.language_token_id(code);
}

inline void exercise_tokenizer(const Tokenizer& tok, const std::string& text, bool add_special, bool skip_special) {
    EncodeOptions options;
    options.add_special_tokens = add_special;
    exercise_tokenizer(tok, text, options, skip_special);
}

}  // namespace lorascope::fuzz
