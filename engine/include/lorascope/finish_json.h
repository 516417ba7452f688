// A finished request as one JSON object: the shape `lorascope-cli generate` writes on each output
// line and the window exports, and its reader (scripts and tests read those lines back).
//
//   {"id", "text", "token_ids", "finish_reason", "prompt_tokens", "generated_tokens",
//    "queue_ms", "time_to_first_token_ms", "total_ms",
//    "stop_sequence" (finish_reason "stop"), "logprobs" (when asked), "alternatives" (when asked:
//    per generated token [{"token_id", "logprob", "text"}], most likely first), "prompt_logprobs"
//    (when asked: [{"token_id", "text", "logprob" (null for a first prompt token)}]), "sequences"
//    (several returned: [{"text", "token_ids", "score" (beams, best_of), "logprobs", "alternatives"
//    (sampled rows, when asked)}], best first), "error" (finish_reason "error")}
#pragma once

#include <optional>
#include <string>

#include "lorascope/engine.h"

namespace lorascope {

// "eos", "length", "stop", "cancelled", "error"; none for another name.
std::optional<FinishReason> finish_reason_from_string(const std::string& name);

struct FinishJsonOptions {
    // FinishEvent::client_id holds the id's JSON text (the CLI keeps 7 and "7" apart that way);
    // false: it is a plain string.
    bool client_id_is_json = false;
};

// One compact JSON object, no newline.
std::string finish_to_json(const FinishEvent& event, const FinishJsonOptions& options = {});

// The reader: a line finish_to_json wrote (or an error line without the engine's fields).
// client_id receives the id's JSON text when client_id_is_json, else the string's value.
// Throws lorascope::Error (Format) naming `source` and what is wrong.
FinishEvent finish_from_json(const std::string& line, const FinishJsonOptions& options = {},
                             const std::string& source = "finish line");

}  // namespace lorascope
