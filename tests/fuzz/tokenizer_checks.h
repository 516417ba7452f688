// What every loaded tokenizer must do with any text and any ids (tests/fuzz): encode and decode
// without crashing, decode to valid UTF-8, and stream exactly what decode() returns.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lorascope/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lorascope::fuzz {

inline void fail_check(const char* what, const std::string& a, const std::string& b) {
    std::fprintf(stderr, "%s\n  streamed: %s\n  decoded:  %s\n", what, a.c_str(), b.c_str());
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

inline void exercise_tokenizer(const Tokenizer& tok, const std::string& text, bool add_special, bool skip_special) {
    const std::vector<int64_t> ids = tok.encode(text, add_special);
    const int64_t vocab = tok.vocab_size();
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
}

}  // namespace lorascope::fuzz
