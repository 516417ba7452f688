// The remote backend's conversations: a Request carrying a conversation goes to the server's
// POST /v1/chat/completions (vLLM's, LoRAX's or `lorascope-cli serve`'s), streamed, so that the
// server's own chat template lays it out. Its chunks ("chat.completion.chunk") are read as
// /v1/completions' chunks once their delta and logprobs are put in that shape.
#pragma once

#include <QJsonObject>

#include "lorascope/chat.h"

namespace lorascope::ui::remote_detail {

// The chat request for a conversation from the /v1/completions request the same parameters make
// (`completion`): its prompt replaced by the messages (tools and template variables too), logprobs
// asked for in the chat form. `base_model_name`: what `model` says for the base model (LoRAX: "").
QJsonObject chatRequestBody(QJsonObject completion, const Conversation& conversation, bool adapter_given,
                            const QString& base_model_name);

// A "chat.completion.chunk" as a "text_completion" chunk: choices[0].delta.content as text,
// logprobs.content[i] as tokens/token_logprobs; usage and finish_reason as they are.
QJsonObject completionChunkOf(const QJsonObject& chat_chunk);

}  // namespace lorascope::ui::remote_detail
