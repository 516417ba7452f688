// The batching lab: define or load a workload, run it on the loaded model under two batching
// policies (A, then B, each on an engine of its own), watch it at real speed or slowed to a
// minimum step duration, pause and step, and compare: the summary table (the engine library's
// bench figures), a timeline per policy, and charts with both policies overlaid. Wiring only:
// LabRunner runs, LabRunData holds, the widgets show.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "engine_link/engine_bridge.h"

class QLabel;
class QPushButton;
class QSlider;
class QTableView;
class QTabWidget;
class QTimer;

namespace lorascope::ui {

class LabCharts;
class LabRunData;
class LabFrontierView;
class LabLatencyCharts;
class LabGoodputForm;
class LabPolicyEditor;
class LabRequestModel;
class LabRunner;
class LabSummaryModel;
class LabTimelineWidget;
class LabWorkloadForm;

class LabView : public QWidget {
    Q_OBJECT
public:
    LabView(EngineBridge* bridge, EngineFactory factory, QWidget* parent = nullptr);

    LabRunner* runner() const { return runner_; }
    LabWorkloadForm* workloadForm() const { return form_; }
    LabPolicyEditor* policyEditor() const { return policies_; }
    LabGoodputForm* goodputForm() const { return goodput_; }
    LabTimelineWidget* timeline(int i) const { return i == 0 ? timeline_a_ : timeline_b_; }
    LabCharts* charts() const { return charts_; }
    LabFrontierView* frontier() const { return frontier_; }
    LabLatencyCharts* latencyCharts() const { return latency_charts_; }
    LabSummaryModel* summary() const { return summary_; }
    LabRequestModel* requestModel() const { return request_model_; }
    QTableView* requestTable() const { return request_table_; }
    QPushButton* runButton() const { return run_; }
    QPushButton* pauseButton() const { return pause_; }
    QPushButton* cancelButton() const { return cancel_; }
    QPushButton* stepButton() const { return step_; }
    QSlider* paceSlider() const { return pace_; }

    // The preset workload (lab_workload_form.h) with A continuous and B static, 8 rows each.
    void usePreset();
    void setAdapterNames(const QStringList& names);
    // Starts A then B on the form's workload; false (and errorOccurred) without a model or with a
    // workload the model cannot run.
    bool run();
    // Starts the frontier view's sweep on the form's workload with policy A as its base; false
    // (and errorOccurred) as for run().
    bool runSweep();
    void setMinStepMs(int ms);
    void refreshNow();   // charts and summary at once (tests, screenshots, export)
    QStringList exportTo(const QString& dir, QString* error);

Q_SIGNALS:
    void errorOccurred(const QString& title, const QString& message);

private:
    QWidget* buildControls();
    QWidget* buildSetupPage();
    QWidget* buildSummaryTable();
    QWidget* buildResultsPage();
    void connectRunner();
    // The form's workload for the loaded model, and the adapters to load; none (and errorOccurred)
    // when it cannot run.
    struct Prepared {
        std::vector<Request> requests;
        std::vector<double> arrivals_s;
        AdapterDirs adapters;
    };
    std::optional<Prepared> prepareWorkload();
    std::vector<const LabRunData*> runs() const;   // every policy's run data, for the charts
    void refreshSoon();
    void refreshSlice();
    void refreshLegend();
    void refreshSummary();
    void refreshStatus();
    void selectRequest(int policy, int request_index);
    void loadWorkloadFile();
    void saveWorkloadFile();
    void exportInteractively();
    QStringList policyNames() const;

    EngineBridge* bridge_;
    LabRunner* runner_ = nullptr;
    LabWorkloadForm* form_ = nullptr;
    LabPolicyEditor* policies_ = nullptr;
    LabGoodputForm* goodput_ = nullptr;
    QLabel* legend_ = nullptr;
    LabTimelineWidget *timeline_a_ = nullptr, *timeline_b_ = nullptr;
    LabCharts* charts_ = nullptr;
    LabFrontierView* frontier_ = nullptr;
    LabLatencyCharts* latency_charts_ = nullptr;
    LabSummaryModel* summary_ = nullptr;
    LabRequestModel* request_model_ = nullptr;
    QTableView *summary_table_ = nullptr, *request_table_ = nullptr;
    QTabWidget *pages_ = nullptr, *tabs_ = nullptr;
    QPushButton *run_ = nullptr, *cancel_ = nullptr, *pause_ = nullptr, *step_ = nullptr, *export_ = nullptr,
                *preset_ = nullptr;
    QSlider* pace_ = nullptr;
    QLabel *pace_label_ = nullptr, *status_ = nullptr;
    QTimer* chart_timer_ = nullptr;
    QTimer* slice_timer_ = nullptr;
    int slice_ = -1;              // the next slice of refreshSoon's redraw, -1: none under way
    bool slice_again_ = false;    // data changed during a redraw: one more after it
    QStringList run_policy_names_;
    QString run_workload_json_;
};

}  // namespace lorascope::ui
