// A text prompt truncated to its last tokens as Hugging Face's tokenizer does it with
// truncation=True, max_length=N and truncation_side "left" (how LoRAX applies a request's
// `truncate`): the text's own tokens are cut to N minus the special tokens the model adds, and
// those special tokens stay (BART keeps <s> ... </s>, T5 its </s>).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lorascope/tokenizer.h"

namespace lorascope::tokenizer {

// The ids of `text` with the model's special tokens, at most `max_tokens` of them. Throws
// Error(InvalidArgument, source, ...) when max_tokens leaves no room beside the special tokens.
// `options` (its src_lang, say) is how the text is encoded; add_special_tokens is taken as true.
std::vector<int64_t> truncate_left(const Tokenizer& tokenizer, const std::string& text, int64_t max_tokens,
                                   const std::string& source, EncodeOptions options = {});

}  // namespace lorascope::tokenizer
