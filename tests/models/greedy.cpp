#include "greedy.h"

#include <algorithm>
#include <limits>

#include "lorascope/error.h"

namespace lorascope::test {

GreedyOptions GreedyOptions::from_model(const Model& model) {
    GreedyOptions o;
    o.eos_token_ids = model.eos_token_ids();
    o.forced_bos_token_id = model.generation_config().forced_bos_token_id;
    o.forced_eos_token_id = model.generation_config().forced_eos_token_id;
    for (const auto& seq : model.generation_config().bad_words_ids)
        if (seq.size() == 1) o.banned_token_ids.push_back(seq[0]);
    return o;
}

std::vector<GreedyOutput> greedy_generate(const Model& model, const std::vector<GreedyRequest>& requests,
                                          const GreedyOptions& options) {
    std::vector<GreedyOutput> out(requests.size());
    if (requests.empty()) return out;
    std::vector<std::vector<int64_t>> prompts;
    for (const auto& r : requests) {
        if (r.max_new_tokens < 1) throw Error(ErrorKind::InvalidArgument, "max_new_tokens must be at least 1");
        prompts.push_back(r.prompt);
    }
    const bool seq2seq = model.is_encoder_decoder();
    const TokenBatch batch = TokenBatch::from_rows(prompts, model.pad_token_id(), model.options().device());
    auto [state, logits] = model.prefill(batch, options.lora);

    // row_of[i]: the request held by batch row i.
    std::vector<size_t> row_of(requests.size());
    for (size_t i = 0; i < row_of.size(); ++i) row_of[i] = i;
    auto is_eos = [&](int64_t t) {
        return std::find(options.eos_token_ids.begin(), options.eos_token_ids.end(), t) != options.eos_token_ids.end();
    };
    const at::Tensor banned = at::tensor(options.banned_token_ids, at::TensorOptions().dtype(at::kLong));
    while (!row_of.empty()) {
        if (banned.numel() > 0)
            logits = logits.index_fill(-1, banned.to(logits.device()), -std::numeric_limits<float>::infinity());
        at::Tensor chosen = logits.argmax(-1).to(at::kCPU).contiguous();
        std::vector<int64_t> next(chosen.data_ptr<int64_t>(), chosen.data_ptr<int64_t>() + chosen.numel());
        std::vector<int64_t> keep;
        for (size_t i = 0; i < row_of.size(); ++i) {
            const size_t r = row_of[i];
            GreedyOutput& o = out[r];
            if (!o.finish_reason.empty()) continue;  // finished earlier; row kept only as padding
            const int64_t position = static_cast<int64_t>(o.tokens.size());
            // HF forces BOS when the sequence so far is one token long (the decoder start, or a
            // one-token prompt) and EOS when one slot is left before max_length.
            const bool first = seq2seq ? position == 0 : (position == 0 && requests[r].prompt.size() == 1);
            if (first && options.forced_bos_token_id) next[i] = *options.forced_bos_token_id;
            else if (position == requests[r].max_new_tokens - 1 && options.forced_eos_token_id)
                next[i] = *options.forced_eos_token_id;
            o.tokens.push_back(next[i]);
            if (is_eos(next[i])) o.finish_reason = "eos";
            else if (static_cast<int64_t>(o.tokens.size()) >= requests[r].max_new_tokens) o.finish_reason = "length";
            if (o.finish_reason.empty()) keep.push_back(static_cast<int64_t>(i));
        }
        if (keep.empty()) break;
        at::Tensor tokens = at::tensor(next, at::TensorOptions().dtype(at::kLong));
        if (options.drop_finished_rows && keep.size() < row_of.size()) {
            std::vector<size_t> kept_rows;
            for (int64_t i : keep) kept_rows.push_back(row_of[static_cast<size_t>(i)]);
            row_of = std::move(kept_rows);
            state.filter(keep);
            tokens = tokens.index_select(0, at::tensor(keep, at::TensorOptions().dtype(at::kLong)));
        }
        logits = model.decode_step(state, tokens.to(model.options().device()), options.lora);
    }
    return out;
}

}  // namespace lorascope::test
