// The batching inspector's page for a remote backend: the server's own aggregates, as polled
// from its /metrics (ServerMetricsModel), charted and tabled under a title that says so, the
// state of the polling (live, or why not), and the per-request timings this window measured.
#pragma once

#include <QWidget>

#include <vector>

#include "common/compact_chart.h"

class QLabel;
class QTableView;

namespace lorascope::ui {

class RequestTableModel;
class ServerMetricsModel;

class ServerMetricsView : public QWidget {
    Q_OBJECT
public:
    ServerMetricsView(ServerMetricsModel* metrics, RequestTableModel* requests, QWidget* parent = nullptr);

    QLabel* titleLabel() const { return title_; }
    QLabel* stateLabel() const { return state_; }
    QLabel* clientLabel() const { return client_; }
    int chartCount() const { return int(charts_.size()); }
    int pointCount(int chart, int series = 0) const;
    static constexpr int kWindow = 300;   // polls shown in the charts

public Q_SLOTS:
    void refresh();
    void refreshClientTimings();

protected:
    void showEvent(QShowEvent* e) override;

private:
    void refreshState();
    void refreshCharts();

    ServerMetricsModel* metrics_;
    RequestTableModel* requests_;
    QLabel *title_ = nullptr, *state_ = nullptr, *client_ = nullptr;
    QTableView* table_ = nullptr;
    std::vector<CompactChart> charts_;
    bool dirty_ = false;
};

}  // namespace lorascope::ui
