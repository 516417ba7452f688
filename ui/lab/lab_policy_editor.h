// The lab's batching policies side by side, one column each (A, B): continuous or static batching,
// max batch size and tokens, the prefill budget and chunk, the KV cache's size and the adapter
// memory budget, as the engine's EngineOptions define them (lorascope/engine.h).
#pragma once

#include <QGroupBox>
#include <vector>

#include "lorascope/engine.h"

class QComboBox;
class QSpinBox;

namespace lorascope::ui {

class LabPolicyEditor : public QGroupBox {
    Q_OBJECT
public:
    explicit LabPolicyEditor(const QStringList& names, QWidget* parent = nullptr);
    int policyCount() const { return int(columns_.size()); }
    QString name(int policy) const;
    void setPolicy(int policy, const EngineOptions& options);
    // The batching fields of `base` replaced by this policy's.
    EngineOptions apply(int policy, EngineOptions base) const;
    QString describe(int policy) const;   // "continuous, 8 rows, prefill 64"

private:
    struct Column {
        QString name;
        QComboBox* batching = nullptr;
        QSpinBox *max_batch = nullptr, *max_tokens = nullptr, *prefill_budget = nullptr, *prefill_chunk = nullptr,
                 *kv_mb = nullptr, *adapter_mb = nullptr;
    };
    std::vector<Column> columns_;
};

}  // namespace lorascope::ui
