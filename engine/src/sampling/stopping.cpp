#include "sampling/stopping.h"

#include <algorithm>

namespace lorascope::sampling {

StopSequenceMatcher::StopSequenceMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
    for (const std::string& s : stops_) longest_ = std::max(longest_, s.size());
}

void StopSequenceMatcher::add_context(const std::string& piece) {
    if (stops_.empty()) return;
    pieces_tail_ += piece;
    if (pieces_tail_.size() >= longest_) pieces_tail_.erase(0, pieces_tail_.size() - (longest_ - 1));
}

StopSequenceMatcher::Result StopSequenceMatcher::push(const std::string& delta, const std::string& piece) {
    Result result;
    if (matched_) return result;
    if (stops_.empty()) {
        result.text = delta;
        return result;
    }
    // StopStringCriteria: a stop string that ends inside this token's piece completes now (one that
    // ended earlier would have stopped generation then).
    const size_t before = pieces_tail_.size();
    pieces_tail_ += piece;
    std::vector<const std::string*> completed;
    for (const std::string& s : stops_) {
        const size_t from = before + 1 >= s.size() ? before + 1 - s.size() : 0;
        if (pieces_tail_.find(s, from) != std::string::npos) completed.push_back(&s);
    }
    if (pieces_tail_.size() >= longest_) pieces_tail_.erase(0, pieces_tail_.size() - (longest_ - 1));

    std::string pending = held_ + delta;
    held_.clear();
    if (!completed.empty()) {
        // Cut the text where the stop string begins; the earliest occurrence wins. Released text
        // never holds the start of a match (it would have been held), so it lies inside `pending`;
        // when the text does not show it at all (its characters are still held by the
        // detokenizer), everything pending is released.
        size_t match = std::string::npos;
        matched_stop_ = *completed.front();
        for (const std::string* s : completed) {
            const size_t at = pending.find(*s);
            if (at < match) {
                match = at;
                matched_stop_ = *s;
            }
        }
        matched_ = true;
        result.matched = true;
        result.text = match == std::string::npos ? pending : pending.substr(0, match);
        return result;
    }
    // Hold back from the earliest position whose suffix is a proper prefix of some stop sequence.
    const size_t first = pending.size() > longest_ ? pending.size() - longest_ + 1 : 0;
    size_t hold_from = pending.size();
    for (size_t p = first; p < pending.size() && hold_from == pending.size(); ++p) {
        const size_t tail = pending.size() - p;
        for (const std::string& s : stops_) {
            if (s.size() > tail && s.compare(0, tail, pending, p, tail) == 0) {
                hold_from = p;
                break;
            }
        }
    }
    result.text = pending.substr(0, hold_from);
    held_ = pending.substr(hold_from);
    return result;
}

std::string StopSequenceMatcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

const char* to_string(StopReason reason) {
    switch (reason) {
        case StopReason::None: return "none";
        case StopReason::Eos: return "eos";
        case StopReason::Length: return "length";
        case StopReason::Stop: return "stop";
    }
    return "none";
}

StoppingCriteria::StoppingCriteria(const ResolvedGenerationParams& params, int64_t max_new_tokens)
    : eos_token_ids_(params.eos_token_ids),
      ignore_eos_(params.ignore_eos),
      max_new_tokens_(max_new_tokens),
      matcher_(params.stop) {}

StoppingCriteria::Step StoppingCriteria::push(int64_t token_id, const std::string& text_delta, const std::string& piece) {
    Step step;
    if (reason_ != StopReason::None) return step;
    ++generated_;
    StopSequenceMatcher::Result matched = matcher_.push(text_delta, piece);
    step.text = std::move(matched.text);
    if (matched.matched) {
        step.reason = StopReason::Stop;
    } else if (!ignore_eos_ &&
               std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token_id) != eos_token_ids_.end()) {
        step.reason = StopReason::Eos;
    } else if (generated_ >= max_new_tokens_) {
        step.reason = StopReason::Length;
    }
    if (step.reason == StopReason::Eos || step.reason == StopReason::Length) step.text += matcher_.flush();
    text_ += step.text;
    reason_ = step.reason;
    return step;
}

std::string StoppingCriteria::flush() {
    std::string out = matcher_.flush();
    text_ += out;
    return out;
}

}  // namespace lorascope::sampling
