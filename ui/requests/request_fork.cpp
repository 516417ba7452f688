#include "requests/request_fork.h"

#include <QCoreApplication>

namespace lorascope::ui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("RequestFork", text); }
}  // namespace

ForkPlan planFork(const RequestRecord& from, int position, const TokenAlternative& choice, bool encoder_decoder) {
    ForkPlan plan;
    if (encoder_decoder) {
        plan.refusal = tr("Forking needs the generated tokens forced at the decoder's start, which the engine does not "
                          "take for encoder-decoder models yet; decoder-only models (BLOOM, Llama) can be forked.");
        return plan;
    }
    if (position < 0 || size_t(position) >= from.tokens.size()) {
        plan.refusal = tr("There is no generated token at that position.");
        return plan;
    }
    std::vector<int64_t> ids = from.input_ids;
    if (ids.empty())
        for (const PromptTokenLogprob& t : from.prompt_logprobs) ids.push_back(t.token_id);
    if (ids.empty()) {
        plan.refusal = tr("The prompt's tokens are unknown: the request did not report them (it asked for no "
                          "alternatives, or the engine does not report prompt tokens).");
        return plan;
    }
    QString continued = from.prompt;
    for (int i = 0; i < position; ++i) {
        ids.push_back(from.tokens[size_t(i)].token_id);
        continued += from.tokens[size_t(i)].text;
    }
    ids.push_back(choice.token_id);
    continued += QString::fromStdString(choice.text);
    plan.request.input_ids = std::move(ids);
    plan.request.merge = from.merge;
    if (!from.merge) plan.request.adapter = from.adapter.toStdString();
    plan.request.params = from.params;
    plan.origin = QStringLiteral("%1 @ token %2").arg(from.client_id).arg(position + 1);
    plan.prompt = continued;
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

void askForPromptTokens(Request& request, bool encoder_decoder) {
    if (!encoder_decoder && request.params.top_alternatives.value_or(0) > 0) request.params.prompt_logprobs = true;
}

}  // namespace lorascope::ui
