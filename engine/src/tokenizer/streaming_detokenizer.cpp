#include "lorascope/tokenizer.h"

#include "tokenizer/unicode.h"

namespace lorascope {

namespace {

// A character after which no clean-up pattern (" .", " n't", " 's", ...) can continue: every
// pattern's adjacent pairs start with ' ', '\'', 'n', 'v' or 'r', and clean-up only deletes spaces,
// so a split right after any other character gives the same result as cleaning the whole text.
bool ends_cleanup_context(char c) { return c != ' ' && c != '\'' && c != 'n' && c != 'v' && c != 'r'; }

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                           std::vector<int64_t> context_ids)
    : tokenizer_(tokenizer), decoder_(tokenizer.make_decoder(skip_special_tokens)) {
    suppress_ = true;
    for (int64_t id : context_ids) push(id);
    suppress_ = false;
    ids_.clear();
}

std::string StreamingDetokenizer::push(int64_t id) {
    ids_.push_back(id);
    decoder_->push(id, pending_bytes_);
    std::string out = take_stable_text(false);
    return suppress_ ? std::string() : out;
}

std::string StreamingDetokenizer::finish() {
    decoder_->finish(pending_bytes_);
    return take_stable_text(true);
}

std::string StreamingDetokenizer::take_stable_text(bool final) {
    // Bytes to text up to the start of an incomplete UTF-8 sequence, which later bytes may complete.
    const size_t complete = final ? pending_bytes_.size() : tokenizer::utf8_complete_prefix(pending_bytes_);
    pending_text_ += tokenizer::utf8_lossy(std::string_view(pending_bytes_).substr(0, complete));
    pending_bytes_.erase(0, complete);
    if (!tokenizer_.clean_up_tokenization_spaces()) {
        std::string out;
        out.swap(pending_text_);
        return out;
    }
    size_t cut = pending_text_.size();
    if (!final) {
        while (cut > 0 && !ends_cleanup_context(pending_text_[cut - 1])) --cut;
    }
    std::string out = Tokenizer::clean_up_tokenization(pending_text_.substr(0, cut));
    pending_text_.erase(0, cut);
    return out;
}

}  // namespace lorascope
