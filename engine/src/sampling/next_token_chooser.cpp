#include "sampling/next_token_chooser.h"

#include <ATen/CPUGeneratorImpl.h>

#include <limits>

#include "ops/row_argmax.h"

namespace lorascope::sampling {

at::Generator make_request_generator(uint64_t seed) {
    return at::make_generator<at::CPUGeneratorImpl>(seed);
}

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::vector<TokenChoice> choose_next_tokens(const at::Tensor& scores, const std::vector<LogitsRow>& rows,
                                            const std::vector<at::Generator>& generators) {
    TORCH_CHECK(scores.dim() == 2 && scores.size(0) == static_cast<int64_t>(rows.size()),
                "choose_next_tokens: scores must be [rows, vocab] matching rows");
    TORCH_CHECK(generators.size() == rows.size(), "choose_next_tokens: one generator slot per row");
    std::vector<TokenChoice> out(rows.size());
    std::vector<int64_t> greedy, sampled, with_logprobs;
    for (size_t r = 0; r < rows.size(); ++r) {
        (rows[r].params->do_sample ? sampled : greedy).push_back(static_cast<int64_t>(r));
        if (rows[r].params->needs_logprobs()) with_logprobs.push_back(static_cast<int64_t>(r));
        out[r].logprob = std::numeric_limits<float>::quiet_NaN();
    }
    const auto long_options = at::TensorOptions().dtype(at::kLong);
    auto rows_of = [&](const std::vector<int64_t>& idx) {
        if (static_cast<int64_t>(idx.size()) == scores.size(0)) return scores;
        return scores.index_select(0, at::tensor(idx, long_options).to(scores.device()));
    };

    if (!greedy.empty()) {
        // First maximal index on ties, as torch.argmax in HF's greedy search.
        at::Tensor rows = rows_of(greedy);
        if (rows.device().is_cpu() && rows.scalar_type() == at::kFloat && rows.stride(1) == 1) {
            std::vector<int64_t> best(greedy.size());  // on our pool: ops/row_argmax.h says why
            ops::argmax_rows(rows.data_ptr<float>(), rows.size(0), rows.size(1), rows.stride(0), best.data());
            for (size_t i = 0; i < greedy.size(); ++i) out[greedy[i]].token_id = best[i];
        } else {
            at::Tensor best = rows.argmax(-1).cpu();
            const int64_t* best_ids = best.data_ptr<int64_t>();
            for (size_t i = 0; i < greedy.size(); ++i) out[greedy[i]].token_id = best_ids[i];
        }
    }
    if (!sampled.empty()) {
        at::Tensor probs = rows_of(sampled).softmax(-1).cpu();
        for (size_t i = 0; i < sampled.size(); ++i) {
            const at::Generator& generator = generators[sampled[i]];
            TORCH_CHECK(generator.defined(), "choose_next_tokens: sampling row without a generator");
            at::Tensor row = probs.narrow(0, static_cast<int64_t>(i), 1);
            try {
                out[sampled[i]].token_id = at::multinomial(row, 1, /*replacement=*/false, generator).item<int64_t>();
            } catch (const c10::Error& e) {
                out[sampled[i]].error = first_line(e.what_without_backtrace());
            }
        }
    }
    if (!with_logprobs.empty()) {
        std::vector<int64_t> chosen;
        for (int64_t r : with_logprobs) chosen.push_back(out[r].token_id);   // 0 for a failed row: unused
        at::Tensor index = at::tensor(chosen, long_options).to(scores.device()).view({-1, 1});
        at::Tensor logprobs = rows_of(with_logprobs).log_softmax(-1).gather(1, index).cpu();
        const float* values = logprobs.data_ptr<float>();
        for (size_t i = 0; i < with_logprobs.size(); ++i) out[with_logprobs[i]].logprob = values[i];
    }
    return out;
}

}  // namespace lorascope::sampling
