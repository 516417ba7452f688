// The encoder-decoder model types on the two seq2seq paths: t5 and mt5 on the T5 path; bart,
// marian, mbart, m2m_100 (NLLB) and pegasus on the BART path. Each type's class defaults
// (transformers 4.46's configuration_<type>.py) and the architecture switches its class fixes.
#pragma once

#include <string>

#include "lorascope/config.h"

namespace lorascope::io {

bool is_t5_model_type(const std::string& model_type);
bool is_bart_model_type(const std::string& model_type);

// A config with every field at the class default of `model_type` (one of the above).
T5Config t5_defaults(const std::string& model_type);
BartConfig bart_defaults(const std::string& model_type);

}  // namespace lorascope::io
