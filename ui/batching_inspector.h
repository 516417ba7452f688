// What the batcher is doing: live charts (rows, padding, KV cache, queue, step time, tokens/s),
// the step timeline, the step table, and pause / single-step to walk through joins and filters.
#pragma once

#include <QWidget>
#include <vector>

class QCheckBox;
class QChart;
class QComboBox;
class QLabel;
class QLineSeries;
class QPushButton;
class QTableView;
class QValueAxis;

namespace lorascope::ui {

class BatchTimelineWidget;
class StepStatsModel;

class BatchingInspector : public QWidget {
    Q_OBJECT
public:
    explicit BatchingInspector(StepStatsModel* model, QWidget* parent = nullptr);
    QPushButton* pauseButton() const { return pause_; }
    QPushButton* stepButton() const { return step_; }
    BatchTimelineWidget* timeline() const { return timeline_; }
    int chartCount() const { return int(charts_.size()); }
    // Points currently plotted by a chart's first series (tests).
    int pointCount(int chart) const;
    static constexpr int kWindow = 300;   // steps shown in the charts

public Q_SLOTS:
    void setPaused(bool paused);
    void setEngineAvailable(bool available);
    void refreshCharts();

Q_SIGNALS:
    void pauseToggled(bool paused);
    void stepRequested();

protected:
    void showEvent(QShowEvent* e) override;

private:
    struct Chart {
        QChart* chart;
        std::vector<QLineSeries*> series;
        QValueAxis* x;
        QValueAxis* y;
    };
    Chart makeChart(const QString& title, const QStringList& series_names, const QString& unit);
    StepStatsModel* model_;
    QPushButton *pause_ = nullptr, *step_ = nullptr;
    QComboBox* colour_by_ = nullptr;
    QLabel* summary_ = nullptr;
    BatchTimelineWidget* timeline_ = nullptr;
    QTableView* table_ = nullptr;
    std::vector<Chart> charts_;
    bool dirty_ = false;
};

}  // namespace lorascope::ui
