#include "engine/prompt_scoring.h"

#include "adapters/multi_lora_hook.h"
#include "models/score.h"

namespace lorascope::engine_detail {

void score_prompt(LiveRequest& r, const models::Model& model, const Tokenizer* tokenizer) {
    const adapters::MultiLoraHook hook({r.adapter.weights()}, model.options().device());
    const models::LoraHook* lora = hook.empty() ? nullptr : &hook;
    std::vector<PromptTokenLogprob> out;
    auto add = [&](int64_t id, std::optional<double> logprob) {
        out.push_back({id, token_piece(tokenizer, id),
                       logprob ? std::optional<float>(static_cast<float>(*logprob)) : std::nullopt});
    };
    if (model.is_encoder_decoder()) {
        const ScoreResult s = models::score(model, r.prompt_ids, r.target_ids, lora);
        for (size_t j = 0; j < r.target_ids.size(); ++j) add(r.target_ids[j], s.token_logprobs.at(j));
    } else {
        add(r.prompt_ids.front(), std::nullopt);
        if (r.prompt_ids.size() > 1) {
            const std::vector<int64_t> rest(r.prompt_ids.begin() + 1, r.prompt_ids.end());
            const ScoreResult s = models::score(model, {r.prompt_ids.front()}, rest, lora);
            for (size_t j = 0; j < rest.size(); ++j) add(rest[j], s.token_logprobs.at(j));
        }
    }
    r.prompt_logprobs = std::move(out);
    r.prompt_scored = true;
}

}  // namespace lorascope::engine_detail
