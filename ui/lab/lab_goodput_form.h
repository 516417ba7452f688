// The lab's goodput targets: a request counts as good when it finished without error within both
// the time-to-first-token and the per-token (time per output token) target, exactly as
// `lorascope-cli bench --goodput-ttft-ms / --goodput-tpot-ms` counts it (lorascope/bench_report.h).
// 0 bounds nothing.
#pragma once

#include <QGroupBox>

#include "lorascope/bench_report.h"

class QDoubleSpinBox;

namespace lorascope::ui {

class LabGoodputForm : public QGroupBox {
    Q_OBJECT
public:
    explicit LabGoodputForm(QWidget* parent = nullptr);
    LatencyTargets targets() const;
    void setTargets(const LatencyTargets& targets);   // rounded to the boxes' 0.1 ms

Q_SIGNALS:
    void targetsChanged(const LatencyTargets& targets);

private:
    QDoubleSpinBox *ttft_ = nullptr, *tpot_ = nullptr;
};

}  // namespace lorascope::ui
