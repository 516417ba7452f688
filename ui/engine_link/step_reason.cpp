#include "engine_link/step_reason.h"

#include <QCoreApplication>
#include <QStringList>

namespace lorascope::ui {

QString stepPrefillReason(const StepStats& s) {
    QStringList parts;
    if (s.row_limit > 0 && s.row_plan_ms > 0)
        parts << QCoreApplication::translate("StepReason", "row limit %1 (decoding planned for %2 ms)").arg(s.row_limit).arg(s.row_plan_ms, 0, 'f', 1);
    else if (s.row_limit > 0)
        parts << QCoreApplication::translate("StepReason", "row limit %1").arg(s.row_limit);
    if (s.prefill_margin > 0)
        parts << QCoreApplication::translate("StepReason", "prefill planned against the target / %1").arg(s.prefill_margin, 0, 'f', 2);
    if (s.bulk_prefill) parts << QCoreApplication::translate("StepReason", "bulk step: whole prompts past the plan");
    return parts.join(QStringLiteral("; "));
}

}  // namespace lorascope::ui
