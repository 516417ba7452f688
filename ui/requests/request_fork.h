// "What if it had said X": a new request that continues another one's output from a position with
// an alternative token forced there (issue 32). Same adapter and parameters; the generated tokens
// before the position, then the chosen one, are forced as ids, so nothing is re-tokenized
// differently: after the prompt's tokens (decoder-only) or at the decoder's start
// (encoder-decoder). Also the blend column's request.
#pragma once

#include <QString>
#include <optional>
#include <vector>

#include "lorascope/engine.h"
#include "requests/request_record.h"

namespace lorascope::ui {

struct ForkPlan {
    Request request;
    QString origin;    // "<client id> @ token N" (N counted from 1), for the new row
    QString prompt;    // what the new row shows as its prompt: the text it continues
    QString refusal;   // non-empty: no fork is possible, and why (the rest is unset)
    int offset = 0;    // the forced tokens: the new row's output begins at this position of its origin's
};

// `position`: the index of the generated token to replace. A decoder-only model continues from
// the prompt's ids, which the record has when it was sent as ids or when the engine reported its
// prompt tokens (params.prompt_logprobs: see askForPromptTokens). An encoder-decoder model keeps
// its encoder input and has the tokens forced at the start of its decoder
// (Request::decoder_prefix_ids); its new row's prompt reads "<prompt> → <forced text>".
ForkPlan planFork(const RequestRecord& from, int position, const TokenAlternative& choice, bool encoder_decoder);

// A comparison's blend column: the prompt and parameters of the comparison's first plain request
// (neither a fork nor a blend) under the merged adapter; none when the group has no such request.
std::optional<Request> blendOf(const std::vector<const RequestRecord*>& group, const AdapterMerge& merge);

// Decoder-only requests that report alternatives also ask for their prompt's tokens (with their
// log-probabilities, which the surprise view shows), so that any of their tokens can be forked.
// Not to a remote server (`remote`): it takes no token ids to fork from, and LoRAX answers
// decoder_input_details only unstreamed.
void askForPromptTokens(Request& request, bool encoder_decoder, bool remote = false);

}  // namespace lorascope::ui
