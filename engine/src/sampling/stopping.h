// When a request stops (eos unless ignore_eos, max_new_tokens, a stop sequence) and which text it
// may release so far.
//
// Stop sequences follow transformers' StopStringCriteria (generate(stop_strings=..., tokenizer=...)):
// generation stops after the first token whose own string ("piece": the token decoded alone, with
// the bytes of a partial UTF-8 character replaced by U+FFFD, leading space kept) completes a stop
// string in the concatenation of the pieces so far, context included (the prompt of a decoder-only
// model, the decoder start token of a seq2seq one). So a match may span tokens, but a character
// whose bytes are split across tokens is never matched, as in Hugging Face.
//
// The released text is the streaming detokenizer's: text that could be the beginning of a stop
// sequence is held back until it either completes a match (then it is dropped, with everything
// after it) or can no longer match (then it is released). The engine feeds the detokenizer's deltas
// through push() and forwards only what comes back, so a client never sees text that is later
// retracted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lorascope/params.h"

namespace lorascope::sampling {

class StopSequenceMatcher {
public:
    explicit StopSequenceMatcher(std::vector<std::string> stops);

    struct Result {
        std::string text;       // safe to emit now
        bool matched = false;   // a stop sequence completed; `text` ends right before it
    };
    // `delta`: the detokenizer's text for this token; `piece`: the token's own string (see above).
    Result push(const std::string& delta, const std::string& piece);
    // Pieces of the ids the model saw before the first generated token.
    void add_context(const std::string& piece);
    // Releases what is held back (the request ends for another reason).
    std::string flush();
    const std::string& held() const { return held_; }
    bool matched() const { return matched_; }
    // The stop sequence that ended generation (the earliest in the text when several completed).
    const std::string& matched_stop() const { return matched_stop_; }

private:
    std::vector<std::string> stops_;
    size_t longest_ = 0;
    std::string held_;
    std::string pieces_tail_;   // the last pieces, enough to end a stop string in the next piece
    bool matched_ = false;
    std::string matched_stop_;
};

enum class StopReason { None, Eos, Length, Stop };
const char* to_string(StopReason reason);

class StoppingCriteria {
public:
    // max_new_tokens as ResolvedGenerationParams::max_new_tokens_for gives it for the row.
    StoppingCriteria(const ResolvedGenerationParams& params, int64_t max_new_tokens);

    struct Step {
        std::string text;                    // to emit for this token (stop-sequence text excluded)
        StopReason reason = StopReason::None;
    };
    // Call once per generated token with the detokenizer's delta for it and the token's piece
    // (StopSequenceMatcher). Once a reason is returned the request is finished; later calls return
    // nothing.
    Step push(int64_t token_id, const std::string& text_delta, const std::string& piece);
    void add_context(const std::string& piece) { matcher_.add_context(piece); }
    // Text the detokenizer still held when the request ended for eos or length (an incomplete
    // UTF-8 tail, text that clean-up could have changed): part of the final text.
    void append_final(const std::string& text) { text_ += text; }
    // Ends the request early (cancelled): releases held-back text.
    std::string flush();

    int64_t generated() const { return generated_; }
    const std::string& text() const { return text_; }   // everything released so far
    StopReason reason() const { return reason_; }
    const std::string& matched_stop() const { return matcher_.matched_stop(); }   // reason Stop

private:
    std::vector<int64_t> eos_token_ids_;
    bool ignore_eos_;
    int64_t max_new_tokens_;
    StopSequenceMatcher matcher_;
    int64_t generated_ = 0;
    std::string text_;
    StopReason reason_ = StopReason::None;
};

}  // namespace lorascope::sampling
