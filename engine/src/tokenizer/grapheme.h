// Extended grapheme clusters (UAX #29, including GB9c and GB11), as the Rust unicode-segmentation
// crate that tokenizers' Precompiled normalizer uses walks them.
#pragma once

#include <cstddef>
#include <string_view>

namespace lorascope::tokenizer {

// Byte offset where the grapheme cluster starting at byte `pos` ends.
size_t next_grapheme_end(std::string_view text, size_t pos);

}  // namespace lorascope::tokenizer
