#include "requests/request_fanout.h"

namespace lorascope::ui {

std::vector<Request> fanOutRequests(const std::vector<PromptItem>& prompts, const QStringList& targets,
                                    const GenerationParams& panel, bool comparison) {
    std::vector<Request> out;
    for (const PromptItem& item : prompts) {
        const QStringList item_targets = item.adapter && !comparison ? QStringList{*item.adapter} : targets;
        for (const QString& target : item_targets) {
            Request r;
            r.prompt = item.prompt.toStdString();
            r.adapter = target.toStdString();
            r.params = mergeParams(panel, item.overrides);
            if (!item.client_id.isEmpty()) {
                const QString where = target.isEmpty() ? QStringLiteral("base") : target;
                r.client_id = (item_targets.size() > 1 ? QStringLiteral("%1@%2").arg(item.client_id, where) : item.client_id)
                                  .toStdString();
            }
            out.push_back(std::move(r));
        }
    }
    return out;
}

}  // namespace lorascope::ui
