#include "engine_link/request_limits.h"

#include <QCoreApplication>

#include <algorithm>

namespace lorascope::ui {

std::optional<int64_t> maxNewTokensFor(const ModelConfig& model) {
    const std::optional<int64_t> context = model.context_tokens();
    if (!context) return std::nullopt;
    return std::max<int64_t>(1, *context - 1);
}

QString positionRefusal(const GenerationParams& params, const ModelConfig& model, const GenerationConfig& generation) {
    const std::optional<int64_t> most = maxNewTokensFor(model);
    const std::optional<int64_t> asked = params.max_new_tokens ? params.max_new_tokens : generation.max_new_tokens;
    if (!most || !asked || *asked <= *most) return {};
    const char* why = model.is_encoder_decoder() ? "the decoder start token takes one" : "the prompt takes at least one";
    return QCoreApplication::translate("RequestLimits",
                                       "max_new_tokens %1 is more than the model can hold: it has %2 positions (%3), so at "
                                       "most %4 new tokens; lower Max new tokens")
        .arg(*asked)
        .arg(*model.context_tokens())
        .arg(QLatin1String(why))
        .arg(*most);
}

}  // namespace lorascope::ui
