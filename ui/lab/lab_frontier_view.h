// The lab's frontier view (issue 33): the lab's workload run under a sweep of per-token targets
// (or prefill budgets), one engine per setting, one after the other (LabRunner, the same code as
// `lorascope-cli bench`), and each setting's throughput plotted against its latency as one point:
// tokens/s against TTFT p50 and against per-token p95, static batching as the reference point.
// The figures are the engine library's BenchFigures; a table below gives them in numbers. A click
// on a point (or a row) selects that setting, and Load into A / B copies its policy to the editor.
#pragma once

#include <QWidget>
#include <vector>

#include "engine_link/engine_loader.h"
#include "lab/lab_sweep.h"

class QChart;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;
class QValueAxis;

namespace lorascope::ui {

class LabSummaryModel;

class LabFrontierView : public QWidget {
    Q_OBJECT
public:
    explicit LabFrontierView(EngineFactory factory, QWidget* parent = nullptr);

    // One finished setting: its name, and where it sits on the two charts.
    struct Point {
        QString name;
        bool reference = false;   // static batching
        double tokens_per_s = 0, ttft_p50_ms = 0, per_token_p95_ms = 0;
    };
    std::vector<Point> points() const;   // in sweep order (static first), finished settings only

    LabSweepKind sweepKind() const;
    void setSweep(LabSweepKind kind, const QList<int>& values);
    QList<int> sweepValues(QString* error) const;   // as the values box reads

    // Runs the sweep's policies (labSweepPolicies of `base`) on `requests`.
    void start(const EngineOptions& base, std::vector<Request> requests, std::vector<double> arrivals_s, AdapterDirs adapters);
    void cancel();
    void setGoodputTargets(const LatencyTargets& targets);
    LabRunner* runner() const { return runner_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* loadButton(int policy) const { return policy == 0 ? load_a_ : load_b_; }
    void selectSetting(int setting);   // a row of the table, as a click on its point does
    int selectedSetting() const;       // -1: none
    QChart* chart(int i) const { return i == 0 ? ttft_chart_ : tpot_chart_; }   // 0: TTFT p50, 1: per-token p95
    LabSummaryModel* summary() const { return summary_; }
    void refresh();
    static QColor settingColour(int setting, bool reference);

Q_SIGNALS:
    void runRequested();   // the Run button: the lab view supplies the workload and the base policy
    // Load into A (0) or B (1): the selected setting's batching options.
    void loadRequested(int policy, const EngineOptions& options);
    void errorOccurred(const QString& title, const QString& message);

private:
    QWidget* buildControls();
    QChart* makeChart(const QString& title, const QString& x_title, QValueAxis** x, QValueAxis** y);
    void plot(QChart* chart, QValueAxis* x, QValueAxis* y, const std::vector<QPointF>& points);
    void refreshStatus();

    LabRunner* runner_ = nullptr;
    QComboBox* kind_ = nullptr;
    QLineEdit* values_ = nullptr;
    QPushButton *run_ = nullptr, *cancel_ = nullptr, *load_a_ = nullptr, *load_b_ = nullptr;
    QLabel *status_ = nullptr, *key_ = nullptr;
    QChart *ttft_chart_ = nullptr, *tpot_chart_ = nullptr;
    QValueAxis *ttft_x_ = nullptr, *ttft_y_ = nullptr, *tpot_x_ = nullptr, *tpot_y_ = nullptr;
    LabSummaryModel* summary_ = nullptr;
    QTableView* table_ = nullptr;
};

}  // namespace lorascope::ui
