#include "tokenizer/truncation.h"

#include <algorithm>

#include "lorascope/error.h"

namespace lorascope::tokenizer {

std::vector<int64_t> truncate_left(const Tokenizer& tokenizer, const std::string& text, int64_t max_tokens,
                                   const std::string& source, EncodeOptions options) {
    options.add_special_tokens = true;
    std::vector<int64_t> full = tokenizer.encode(text, options);
    if (static_cast<int64_t>(full.size()) <= max_tokens) return full;
    options.add_special_tokens = false;
    const std::vector<int64_t> plain = tokenizer.encode(text, options);
    // The post-processor wraps the text's tokens in special ones: find where they sit.
    const auto at = std::search(full.begin(), full.end(), plain.begin(), plain.end());
    if (plain.empty() || at == full.end() || full.size() < plain.size()) {
        // Not text wrapped in special tokens (cannot happen with the post-processors we implement):
        // keep the last ids, as for a prompt given as ids.
        return std::vector<int64_t>(full.end() - max_tokens, full.end());
    }
    const int64_t added = static_cast<int64_t>(full.size() - plain.size());
    if (max_tokens <= added)
        throw Error(ErrorKind::InvalidArgument, source,
                    "truncate " + std::to_string(max_tokens) + " leaves no room for the prompt's text beside the " +
                        std::to_string(added) + " special token(s) the model adds");
    const int64_t keep = max_tokens - added;
    std::vector<int64_t> out(full.begin(), at);
    out.insert(out.end(), plain.end() - keep, plain.end());
    out.insert(out.end(), at + static_cast<std::ptrdiff_t>(plain.size()), full.end());
    return out;
}

}  // namespace lorascope::tokenizer
