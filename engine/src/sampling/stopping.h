// When a request stops (eos unless ignore_eos, max_new_tokens, a stop sequence) and which text it
// may release so far.
//
// Stop sequences are matched on the decoded text, so a match may span tokens. Text that could be
// the beginning of a stop sequence is held back until it either completes a match (then it is
// dropped, with everything after it) or can no longer match (then it is released). The engine
// feeds the streaming detokenizer's deltas through push() and forwards only what comes back, so
// a client never sees text that is later retracted.
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
    Result push(const std::string& delta);
    // Releases what is held back (the request ends for another reason).
    std::string flush();
    const std::string& held() const { return held_; }
    bool matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    size_t longest_ = 0;
    std::string held_;
    bool matched_ = false;
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
    // Call once per generated token with the detokenizer's delta for it. Once a reason is
    // returned the request is finished; later calls return nothing.
    Step push(int64_t token_id, const std::string& text_delta);
    // Ends the request early (cancelled): releases held-back text.
    std::string flush();

    int64_t generated() const { return generated_; }
    const std::string& text() const { return text_; }   // everything released so far
    StopReason reason() const { return reason_; }

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
