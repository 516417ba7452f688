#include "models/score.h"

#include <algorithm>

#include "lorascope/error.h"

namespace lorascope::models {

namespace {

// The decoder's input for labels, as HF's model builds it from `labels`: -100 read as pad, shifted
// right behind the decoder start. mBART's shift_tokens_right starts instead from the last non-pad
// label (its target language code, as its tokenizer places it).
std::vector<int64_t> decoder_input_for(const Model& model, const std::vector<int64_t>& labels) {
    const int64_t pad = model.pad_token_id();
    std::vector<int64_t> padded;
    for (int64_t t : labels) padded.push_back(t == kIgnoreLabel ? pad : t);
    int64_t start = model.decoder_start_token_id();
    if (model.config().model_type == "mbart") {
        const auto non_pad = std::count_if(padded.begin(), padded.end(), [pad](int64_t t) { return t != pad; });
        if (non_pad == 0) throw Error(ErrorKind::InvalidArgument, "mBART labels need a token other than pad to start from");
        start = padded[static_cast<size_t>(non_pad - 1)];
    }
    std::vector<int64_t> out{start};
    out.insert(out.end(), padded.begin(), padded.end() - 1);
    return out;
}

}  // namespace

ScoreResult score(const Model& model, const std::vector<int64_t>& source, const std::vector<int64_t>& labels,
                  const LoraHook* lora) {
    if (labels.empty()) throw Error(ErrorKind::InvalidArgument, "nothing to score: the target is empty");
    const int64_t pad = model.pad_token_id();
    const int64_t V = model.vocab_size();
    for (int64_t t : labels)
        if (t != kIgnoreLabel && (t < 0 || t >= V))
            throw Error(ErrorKind::InvalidArgument, "label " + std::to_string(t) + " is outside the vocabulary");

    at::Tensor logits;              // [N, V]: row j predicts target[j]
    std::vector<int64_t> target;    // labels aligned with logits rows
    if (model.is_encoder_decoder()) {
        DecodeState state = model.start(TokenBatch::from_rows({source}, pad, model.options().device()), lora);
        const std::vector<int64_t> decoder_input = decoder_input_for(model, labels);
        logits = model.forward(state, TokenBatch::from_rows({decoder_input}, pad, model.options().device()),
                               LogitsAt::All, lora)[0];
        target = labels;
    } else {
        std::vector<int64_t> sequence = source;
        for (int64_t t : labels) sequence.push_back(t == kIgnoreLabel ? pad : t);
        DecodeState state = model.start(TokenBatch::from_rows({sequence}, pad, model.options().device()), lora);
        at::Tensor all = model.forward(state, TokenBatch::from_rows({sequence}, pad, model.options().device()),
                                       LogitsAt::All, lora)[0];
        // Position i predicts token i + 1; the prompt's own tokens are not scored.
        logits = all.narrow(0, 0, static_cast<int64_t>(sequence.size()) - 1);
        target.assign(source.size() > 0 ? source.size() - 1 : 0, kIgnoreLabel);
        for (size_t j = source.empty() ? 1 : 0; j < labels.size(); ++j) target.push_back(labels[j]);
    }
    at::Tensor target_t = at::tensor(target, at::TensorOptions().dtype(at::kLong)).to(logits.device());
    ScoreResult result;
    for (int64_t t : target) result.scored_tokens += t != kIgnoreLabel;
    if (result.scored_tokens == 0) throw Error(ErrorKind::InvalidArgument, "nothing to score: every label is -100");
    // log_softmax + nll_loss with ignore_index, which is what CrossEntropyLoss does in HF.
    at::Tensor logp = at::log_softmax(logits, -1);
    result.loss = at::nll_loss(logp, target_t, {}, at::Reduction::Mean, kIgnoreLabel).item<double>();
    at::Tensor lp_cpu = logp.to(at::kCPU);
    const size_t first = target.size() - labels.size() + (model.is_encoder_decoder() || !source.empty() ? 0 : 1);
    if (!model.is_encoder_decoder() && source.empty()) result.token_logprobs.push_back(std::nullopt);
    for (size_t j = first; j < target.size(); ++j) {
        if (target[j] == kIgnoreLabel) result.token_logprobs.push_back(std::nullopt);
        else result.token_logprobs.push_back(lp_cpu[static_cast<int64_t>(j)][target[j]].item<double>());
    }
    return result;
}

}  // namespace lorascope::models
