#include "sampling/alternatives.h"

#include <cmath>
#include <map>

namespace lorascope::sampling {

std::vector<std::vector<Alternative>> top_alternatives(const at::Tensor& scores, const std::vector<LogitsRow>& rows) {
    TORCH_CHECK(scores.dim() == 2 && scores.size(0) == static_cast<int64_t>(rows.size()),
                "top_alternatives: scores must be [rows, vocab] matching rows");
    std::vector<std::vector<Alternative>> out(rows.size());
    // Rows grouped by their k: torch.topk(x, k) may order tied values differently from the first
    // k of torch.topk(x, k') for k' > k, and each row must read what Hugging Face's topk gives.
    std::map<int64_t, std::vector<int64_t>> by_k;
    for (size_t r = 0; r < rows.size(); ++r)
        if (rows[r].params->top_alternatives > 0) by_k[rows[r].params->top_alternatives].push_back(static_cast<int64_t>(r));
    for (const auto& [asked, members] : by_k) {
        const int64_t k = std::min(asked, scores.size(1));
        const at::Tensor picked =
            static_cast<int64_t>(members.size()) == scores.size(0)
                ? scores
                : scores.index_select(0, at::tensor(members, at::TensorOptions().dtype(at::kLong)).to(scores.device()));
        const auto [values, ids] = at::topk(picked.log_softmax(-1), k, /*dim=*/-1, /*largest=*/true, /*sorted=*/true);
        const at::Tensor v = values.cpu().contiguous(), i = ids.cpu().contiguous();
        const float* vp = v.data_ptr<float>();
        const int64_t* ip = i.data_ptr<int64_t>();
        for (size_t m = 0; m < members.size(); ++m) {
            auto& row = out[static_cast<size_t>(members[m])];
            for (int64_t j = 0; j < k; ++j) {
                const float lp = vp[static_cast<int64_t>(m) * k + j];
                if (std::isinf(lp) && lp < 0) break;   // sorted: the rest were ruled out too
                row.push_back({ip[static_cast<int64_t>(m) * k + j], lp});
            }
        }
    }
    return out;
}

}  // namespace lorascope::sampling
