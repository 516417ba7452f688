#include "lab/lab_sweep.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <QStringList>

namespace lorascope::ui {

QList<int> parseSweepValues(const QString& text, QString* error) {
    QList<int> values;
    const QStringList parts = text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
    for (const QString& part : parts) {
        bool ok = false;
        const int v = part.toInt(&ok);
        if (!ok || v <= 0 || v > 1000000) {
            if (error) *error = QCoreApplication::translate("Lab", "\"%1\" is not a positive whole number").arg(part);
            return {};
        }
        values << v;
    }
    if (values.isEmpty() || values.size() > kMaxSweepValues) {
        if (error) *error = QCoreApplication::translate("Lab", "Give 1 to %1 values, separated by commas").arg(kMaxSweepValues);
        return {};
    }
    return values;
}

std::vector<LabPolicy> labSweepPolicies(const EngineOptions& base, LabSweepKind kind, const QList<int>& values) {
    std::vector<LabPolicy> out;
    EngineOptions reference = base;
    reference.static_batching = true;
    reference.tpot_target_ms = 0;
    out.push_back({QCoreApplication::translate("Lab", "static"), reference});
    for (int v : values) {
        EngineOptions o = base;
        o.static_batching = false;
        if (kind == LabSweepKind::TpotTarget) {
            o.tpot_target_ms = v;
            o.prefill_budget_tokens = kPrefillBudgetInTime;
            out.push_back({QCoreApplication::translate("Lab", "target %1 ms").arg(v), o});
        } else {
            o.tpot_target_ms = 0;
            o.prefill_budget_tokens = v;
            out.push_back({QCoreApplication::translate("Lab", "budget %1").arg(v), o});
        }
    }
    return out;
}

}  // namespace lorascope::ui
