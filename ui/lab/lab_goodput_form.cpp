#include "lab/lab_goodput_form.h"

#include <QDoubleSpinBox>
#include <QFormLayout>

namespace lorascope::ui {

namespace {
QDoubleSpinBox* msBox(QWidget* parent, const QString& name, const QString& tip) {
    auto* box = new QDoubleSpinBox(parent);
    box->setRange(0, 3600000);
    box->setDecimals(1);
    box->setSpecialValueText(QObject::tr("none"));
    box->setSuffix(QObject::tr(" ms"));
    box->setAccessibleName(name);
    box->setToolTip(tip);
    return box;
}
}  // namespace

LabGoodputForm::LabGoodputForm(QWidget* parent) : QGroupBox(tr("Goodput targets"), parent) {
    auto* form = new QFormLayout(this);
    form->setContentsMargins(6, 4, 6, 4);
    form->setVerticalSpacing(2);
    ttft_ = msBox(this, tr("Goodput: time to first token target"),
                  tr("A request is good when its first token came within this time of its arrival (and within "
                     "the per-token target)"));
    tpot_ = msBox(this, tr("Goodput: per-token target"),
                  tr("A request is good when its time per output token after the first stayed within this (and "
                     "its first token within the TTFT target)"));
    form->addRow(tr("TTFT"), ttft_);
    form->addRow(tr("Per token"), tpot_);
    for (QDoubleSpinBox* box : {ttft_, tpot_})
        connect(box, &QDoubleSpinBox::valueChanged, this, [this] { Q_EMIT targetsChanged(targets()); });
}

LatencyTargets LabGoodputForm::targets() const {
    LatencyTargets t;
    t.ttft_ms = ttft_->value();
    t.tpot_ms = tpot_->value();
    return t;
}

void LabGoodputForm::setTargets(const LatencyTargets& targets) {
    const QSignalBlocker block_ttft(ttft_), block_tpot(tpot_);
    ttft_->setValue(targets.ttft_ms);
    tpot_->setValue(targets.tpot_ms);
    Q_EMIT targetsChanged(this->targets());
}

}  // namespace lorascope::ui
