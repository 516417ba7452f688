// The lab's charts, every policy's run overlaid in its own colour: batch rows, queue depth and
// KV cache per step, step time, the CDFs of time to first token and of per-token latency, and the
// KV cache each request held at most. Counts get integer ticks; every axis names its unit.
#pragma once

#include <QList>
#include <QPointF>
#include <QWidget>
#include <vector>

class QChart;
class QLineSeries;
class QValueAxis;

namespace lorascope::ui {

class LabRunData;

class LabCharts : public QWidget {
    Q_OBJECT
public:
    explicit LabCharts(QWidget* parent = nullptr);
    // runs[i] may be null (not run yet); names label the series ("A: continuous, 8 rows").
    void refresh(const std::vector<const LabRunData*>& runs, const QStringList& names);
    // One chart of refresh(): a chart of two 500-point series costs a few ms of QtCharts layout, so
    // the lab redraws its charts one per turn of the event loop during a run.
    void refreshChart(int chart, const std::vector<const LabRunData*>& runs, const QStringList& names);
    int chartCount() const { return int(charts_.size()); }
    QChart* chart(int i) const { return charts_.at(size_t(i)).chart; }
    static QColor policyColour(int policy);
    // (value, % of values at or below it), ascending: the CDFs' points.
    static QList<QPointF> cdf(std::vector<double> values);
    static constexpr int kMaxPoints = 500;   // per series (a chart is a few hundred pixels wide): longer runs are sampled evenly

private:
    struct Chart {
        QChart* chart = nullptr;
        QValueAxis *x = nullptr, *y = nullptr;
        bool integer_y = false, integer_x = false;
        std::vector<QLineSeries*> series;   // one per policy
    };
    Chart makeChart(const QString& title, const QString& x_title, const QString& y_title, bool integer_x, bool integer_y);
    static QList<QPointF> points(int chart, const LabRunData& run);
    void setSeries(Chart& c, size_t policy, const QString& name, const QList<QPointF>& points);
    std::vector<Chart> charts_;
};

}  // namespace lorascope::ui
