#include "compare/blend_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QVBoxLayout>

namespace lorascope::ui {

BlendPanel::BlendPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* top = new QHBoxLayout;
    strategy_ = new QComboBox(this);
    strategy_->setAccessibleName(tr("Merge strategy"));
    for (MergeStrategy s : {MergeStrategy::Linear, MergeStrategy::Ties, MergeStrategy::DareLinear, MergeStrategy::DareTies})
        strategy_->addItem(QString::fromLatin1(to_string(s)), int(s));
    density_ = new QDoubleSpinBox(this);
    density_->setRange(0.0, 1.0);
    density_->setSingleStep(0.05);
    density_->setValue(1.0);
    density_->setAccessibleName(tr("Density"));
    density_->setToolTip(tr("The fraction of each adapter's weights TIES and DARE keep (1 keeps all)"));
    auto* strategy_label = new QLabel(tr("Strategy"), this);
    strategy_label->setBuddy(strategy_);
    auto* density_label = new QLabel(tr("Density"), this);
    density_label->setBuddy(density_);
    note_ = new QLabel(this);
    note_->setWordWrap(true);
    top->addWidget(strategy_label);
    top->addWidget(strategy_);
    top->addWidget(density_label);
    top->addWidget(density_);
    top->addWidget(note_, 1);
    layout->addLayout(top);
    grid_ = new QGridLayout;
    layout->addLayout(grid_);
    // Dragging a slider changes its weight many times a second; the blend is generated once the
    // slider rests, not for every value it passed.
    settle_.setSingleShot(true);
    settle_.setInterval(350);
    connect(&settle_, &QTimer::timeout, this, &BlendPanel::applyNow);
    connect(strategy_, qOverload<int>(&QComboBox::currentIndexChanged), this, &BlendPanel::changed);
    connect(density_, &QDoubleSpinBox::valueChanged, this, &BlendPanel::changed);
    setAdapters({});
}

void BlendPanel::setAdapters(const QStringList& names) {
    std::vector<Row> kept;
    for (auto& r : rows_) {
        if (names.contains(r.name)) {
            kept.push_back(r);
            continue;
        }
        delete r.check;
        delete r.slider;
        delete r.value;
    }
    rows_ = std::move(kept);
    for (const QString& name : names) {
        if (adapterCheck(name)) continue;
        Row r{name, new QCheckBox(name, this), new QSlider(Qt::Horizontal, this), new QLabel(this)};
        r.check->setAccessibleName(tr("Blend %1").arg(name));
        r.slider->setRange(0, 100);
        r.slider->setValue(50);
        r.slider->setAccessibleName(tr("Weight of %1").arg(name));
        r.value->setText(QStringLiteral("0.50"));
        connect(r.check, &QCheckBox::toggled, this, &BlendPanel::changed);
        connect(r.slider, &QSlider::valueChanged, this, [this, label = r.value](int v) {
            label->setText(QString::number(v / 100.0, 'f', 2));
            changed();
        });
        rows_.push_back(r);
    }
    for (size_t i = 0; i < rows_.size(); ++i) {
        grid_->addWidget(rows_[i].check, int(i), 0);
        grid_->addWidget(rows_[i].slider, int(i), 1);
        grid_->addWidget(rows_[i].value, int(i), 2);
    }
    grid_->setColumnStretch(1, 1);
    changed();
    settle_.stop();   // new adapters are no change of the blend
}

QCheckBox* BlendPanel::adapterCheck(const QString& name) const {
    for (const auto& r : rows_)
        if (r.name == name) return r.check;
    return nullptr;
}

QSlider* BlendPanel::weightSlider(const QString& name) const {
    for (const auto& r : rows_)
        if (r.name == name) return r.slider;
    return nullptr;
}

AdapterMerge BlendPanel::merge() const {
    AdapterMerge m;
    for (const auto& r : rows_)
        if (r.check->isChecked() && r.slider->value() > 0) {
            m.ids.push_back(r.name.toStdString());
            m.weights.push_back(r.slider->value() / 100.0);
        }
    if (m.ids.size() < 2) return {};
    m.strategy = MergeStrategy(strategy_->currentData().toInt());
    m.density = density_->value();
    return m;
}

void BlendPanel::changed() {
    density_->setEnabled(strategy_->currentIndex() > 0);
    const AdapterMerge m = merge();
    note_->setText(rows_.size() < 2 ? tr("Load two or more adapters to blend them.")
                   : m.ids.empty()  ? tr("Check two or more adapters with a weight above 0.")
                                    : tr("Blend: %1").arg(QString::fromStdString(merge_name(m))));
    settle_.start();
}

void BlendPanel::applyNow() {
    settle_.stop();
    const AdapterMerge m = merge();
    if (!m.ids.empty()) Q_EMIT blendChanged(m);
}

}  // namespace lorascope::ui
