// What the window checks of a request against the loaded model before the engine runs it: new
// tokens within the model's learned positions (BART's max_position_embeddings; T5 and BLOOM have
// none to run out of). The engine's own parameter parser refuses the same, and what needs the
// prompt's token count; the window refuses at submit time instead of failing at the position the
// model lacks after the work is done (200 new tokens on the demo BART's 64 positions once failed
// at token 64 and lost all 64).
#pragma once

#include <QString>
#include <cstdint>
#include <optional>

#include "lorascope/config.h"
#include "lorascope/params.h"

namespace lorascope::ui {

// The most new tokens the model can hold: its positions less the decoder start token (encoder-
// decoder) or less one prompt token (decoder-only); none when unbounded.
std::optional<int64_t> maxNewTokensFor(const ModelConfig& model);

// Why `params` ask more new tokens than the model can hold (the explicit max_new_tokens, else the
// generation config's), or empty.
QString positionRefusal(const GenerationParams& params, const ModelConfig& model, const GenerationConfig& generation);

}  // namespace lorascope::ui
