// Blend sliders (issue 32): two or more adapters, a weight each, a merge strategy (PEFT's
// add_weighted_adapter: linear, ties, dare_linear, dare_ties) and DARE/TIES' density. Each change
// (after the sliders rest a moment) asks for the comparison's blend column to be generated again
// under the merged adapter (Request::merge).
#pragma once

#include <QStringList>
#include <QTimer>
#include <QWidget>
#include <vector>

#include "lorascope/adapter.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QSlider;

namespace lorascope::ui {

class BlendPanel : public QWidget {
    Q_OBJECT
public:
    explicit BlendPanel(QWidget* parent = nullptr);
    void setAdapters(const QStringList& names);   // the ready adapters; checked ones stay checked
    // One adapter's controls, for tests: its row's check box and slider (weight = value / 100).
    QCheckBox* adapterCheck(const QString& name) const;
    QSlider* weightSlider(const QString& name) const;
    QComboBox* strategyBox() const { return strategy_; }
    QDoubleSpinBox* densityBox() const { return density_; }
    // The merge the controls describe; empty ids when fewer than two adapters have weight.
    AdapterMerge merge() const;
    // Emits blendChanged now (what the settle timer does after the last change).
    void applyNow();

Q_SIGNALS:
    void blendChanged(const lorascope::AdapterMerge& merge);

private:
    struct Row {
        QString name;
        QCheckBox* check;
        QSlider* slider;
        QLabel* value;
    };
    void changed();
    std::vector<Row> rows_;
    QGridLayout* grid_ = nullptr;
    QComboBox* strategy_ = nullptr;
    QDoubleSpinBox* density_ = nullptr;
    QLabel* note_ = nullptr;
    QTimer settle_;
};

}  // namespace lorascope::ui
