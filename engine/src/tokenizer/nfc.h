// Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical
// composition), as tokenizers' NFC normalizer (Qwen2's tokenizer.json) applies it, with the
// Unicode data of gen_nfc_tables.py.
#pragma once

#include <string>
#include <string_view>

namespace lorascope::tokenizer {

// NFC of the text. Bytes that are not UTF-8 pass through unchanged and no composition reaches
// across them (tokenizers only ever sees valid text; C++ callers may pass anything).
std::string nfc(std::string_view text);

}  // namespace lorascope::tokenizer
