#include "requests/request_fork.h"

#include <QCoreApplication>

namespace lorascope::ui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("RequestFork", text); }
}  // namespace

ForkPlan planFork(const RequestRecord& from, int position, const TokenAlternative& choice, bool encoder_decoder) {
    ForkPlan plan;
    if (position < 0 || size_t(position) >= from.tokens.size()) {
        plan.refusal = tr("There is no generated token at that position.");
        return plan;
    }
    std::vector<int64_t> forced;   // the generated tokens before the position, then the chosen one
    QString forced_text;
    for (int i = 0; i < position; ++i) {
        forced.push_back(from.tokens[size_t(i)].token_id);
        forced_text += from.tokens[size_t(i)].text;
    }
    forced.push_back(choice.token_id);
    forced_text += QString::fromStdString(choice.text);
    if (encoder_decoder) {
        // The same encoder input; the decoder starts from the forced tokens (HF's decoder_input_ids).
        if (!from.input_ids.empty()) plan.request.input_ids = from.input_ids;
        else plan.request.prompt = from.prompt.toStdString();
        plan.request.decoder_prefix_ids = std::move(forced);
        plan.prompt = from.prompt + QStringLiteral(" → ") + forced_text;
    } else {
        std::vector<int64_t> ids = from.input_ids;
        if (ids.empty())
            for (const PromptTokenLogprob& t : from.prompt_logprobs) ids.push_back(t.token_id);
        if (ids.empty()) {
            plan.refusal = tr("The prompt's tokens are unknown: the request did not report them (it asked for no "
                              "alternatives, or the engine does not report prompt tokens).");
            return plan;
        }
        ids.insert(ids.end(), forced.begin(), forced.end());
        plan.request.input_ids = std::move(ids);
        plan.prompt = from.prompt + forced_text;
    }
    plan.request.merge = from.merge;
    if (!from.merge) plan.request.adapter = from.adapter.toStdString();
    plan.request.params = from.params;
    // An encoder-decoder scores a target it was given, which the fork has not.
    if (encoder_decoder) plan.request.params.prompt_logprobs.reset();
    plan.origin = QStringLiteral("%1 @ token %2").arg(from.client_id).arg(position + 1);
    plan.offset = from.fork_offset + position + 1;   // a fork of a fork continues further along
    return plan;
}

std::optional<Request> blendOf(const std::vector<const RequestRecord*>& group, const AdapterMerge& merge) {
    for (const RequestRecord* r : group) {
        if (!r || !r->forked_from.isEmpty() || r->merge || !r->input_ids.empty()) continue;
        Request blend;
        blend.prompt = r->prompt.toStdString();
        blend.params = r->params;
        blend.merge = merge;
        return blend;
    }
    return std::nullopt;
}

void askForPromptTokens(Request& request, bool encoder_decoder, bool remote) {
    if (!encoder_decoder && !remote && request.params.top_alternatives.value_or(0) > 0) request.params.prompt_logprobs = true;
}

}  // namespace lorascope::ui
