// What the batcher is doing: live charts (rows, padding, KV cache, queue, step time, tokens/s),
// the step timeline, the step table, and pause / single-step to walk through joins and filters.
// With a remote backend there are no engine steps to show: the inspector shows its server page
// instead (ServerMetricsView: the server's own aggregates polled from /metrics, next to the
// per-request timings this window measured).
#pragma once

#include <QWidget>
#include <vector>

#include "common/compact_chart.h"

class QComboBox;
class QLabel;
class QPushButton;
class QStackedWidget;
class QTableView;

namespace lorascope::ui {

class BatchTimelineWidget;
class ServerMetricsView;
class StepStatsModel;

class BatchingInspector : public QWidget {
    Q_OBJECT
public:
    // `server_view` (may be null) becomes the page shown while the backend is a remote server.
    explicit BatchingInspector(StepStatsModel* model, ServerMetricsView* server_view = nullptr, QWidget* parent = nullptr);
    QPushButton* pauseButton() const { return pause_; }
    QPushButton* stepButton() const { return step_; }
    BatchTimelineWidget* timeline() const { return timeline_; }
    ServerMetricsView* serverView() const { return server_view_; }
    bool showsServer() const { return remote_; }
    int chartCount() const { return int(charts_.size()); }
    // Points currently plotted by a chart's first series (tests).
    int pointCount(int chart) const;
    static constexpr int kWindow = 300;   // steps shown in the charts

public Q_SLOTS:
    void setPaused(bool paused);
    void setEngineAvailable(bool available);
    // A remote backend: the server page instead of the engine's steps; pause and step disabled
    // (a shared server is not ours to hold).
    void setRemote(bool remote);
    void refreshCharts();

Q_SIGNALS:
    void pauseToggled(bool paused);
    void stepRequested();

protected:
    void showEvent(QShowEvent* e) override;

private:
    StepStatsModel* model_;
    ServerMetricsView* server_view_;
    QStackedWidget* pages_ = nullptr;
    QWidget* engine_page_ = nullptr;
    bool remote_ = false, engine_available_ = false;
    QPushButton *pause_ = nullptr, *step_ = nullptr;
    QComboBox* colour_by_ = nullptr;
    QLabel* summary_ = nullptr;
    BatchTimelineWidget* timeline_ = nullptr;
    QTableView* table_ = nullptr;
    std::vector<CompactChart> charts_;
    bool dirty_ = false;
};

}  // namespace lorascope::ui
