#include "lab/lab_view.h"

#include <QFileDialog>
#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "common/column_fit.h"
#include "lab/lab_charts.h"
#include "lab/lab_export.h"
#include "lab/lab_frontier_view.h"
#include "lab/lab_goodput_form.h"
#include "lab/lab_latency_charts.h"
#include "lab/lab_policy_editor.h"
#include "lab/lab_request_model.h"
#include "lab/lab_runner.h"
#include "lab/lab_summary_model.h"
#include "lab/lab_timeline_widget.h"
#include "lab/lab_workload_form.h"
#include "lorascope/error.h"
#include "lorascope/workload.h"
#include "common/side_scroll.h"

namespace lorascope::ui {

LabView::LabView(EngineBridge* bridge, EngineFactory factory, QWidget* parent)
    : QWidget(parent), bridge_(bridge), runner_(new LabRunner(factory, this)),
      frontier_(new LabFrontierView(std::move(factory), this)) {
    // Two pages under one row of controls, each as wide as the tab: at 1280 px with every dock open
    // the tab is ~760 px wide, too narrow for the setup column beside the summary and the charts
    // (the summary showed "27…", chart titles "…").
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(2, 2, 2, 2);
    outer->addWidget(buildControls());
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setAccessibleName(tr("Lab run status"));
    // The pace beside the status, not in the buttons' row: one row of both asked 758 px under
    // GNOME's font (Cantarell 11), more than the tab has beside the docks on a 1280 px screen.
    auto* status_row = new QHBoxLayout;
    status_row->addWidget(status_, 1);
    status_row->addWidget(pace_, 1);
    status_row->addWidget(pace_label_);
    outer->addLayout(status_row);
    pages_ = new QTabWidget(this);
    pages_->setAccessibleName(tr("Lab pages"));
    pages_->addTab(buildSetupPage(), tr("Workload and policies"));
    pages_->addTab(buildResultsPage(), tr("Results"));
    // Its sweep row and two charts ask ~680 px under GNOME's 11 pt font: it scrolls sideways rather
    // than push the window past a 1280 px screen (test_ui_window_fit_fake_engine).
    pages_->addTab(sideScrolling(frontier_, pages_), tr("Frontier"));
    outer->addWidget(pages_, 1);
    setMinStepMs(0);

    chart_timer_ = new QTimer(this);
    chart_timer_->setSingleShot(true);
    chart_timer_->setInterval(250);   // charts are costly: at most 4 redraws a second
    connect(chart_timer_, &QTimer::timeout, this, &LabView::refreshSoon);
    slice_timer_ = new QTimer(this);
    slice_timer_->setInterval(0);
    connect(slice_timer_, &QTimer::timeout, this, &LabView::refreshSlice);
    connectRunner();
    connect(timeline_a_, &LabTimelineWidget::requestClicked, this, [this](int i) { selectRequest(0, i); });
    connect(timeline_b_, &LabTimelineWidget::requestClicked, this, [this](int i) { selectRequest(1, i); });
    connect(form_, &LabWorkloadForm::loadRequested, this, &LabView::loadWorkloadFile);
    connect(form_, &LabWorkloadForm::saveRequested, this, &LabView::saveWorkloadFile);
    connect(goodput_, &LabGoodputForm::targetsChanged, this, [this](const LatencyTargets& t) {
        runner_->setGoodputTargets(t);
        frontier_->setGoodputTargets(t);
        refreshNow();
    });
    connect(frontier_, &LabFrontierView::runRequested, this, [this] { runSweep(); });
    connect(frontier_, &LabFrontierView::errorOccurred, this, &LabView::errorOccurred);
    connect(frontier_, &LabFrontierView::loadRequested, this, [this](int policy, const EngineOptions& options) {
        policies_->setPolicy(policy, options);
    });
    timeline_a_->setRun(nullptr, tr("A"));
    timeline_b_->setRun(nullptr, tr("B"));
    usePreset();
    refreshStatus();
}

// The workload beside the two policies, or above them where the tab is too narrow for both, and
// scrolled when the tab is short. Not a minimum width of its own: under GNOME's font (Cantarell 11,
// Qt's GTK 3 theme) the page asks 795 px side by side, and as the window's minimum it pushed the
// Parameters dock off a 1280 px screen; scrolled sideways instead, it hid policy B's column.
QWidget* LabView::buildSetupPage() {
    auto* page = new QWidget(this);
    auto* columns = new QBoxLayout(QBoxLayout::LeftToRight, page);
    columns->setContentsMargins(4, 4, 4, 4);
    form_ = new LabWorkloadForm(page);
    columns->addWidget(form_, 1);
    policies_ = new LabPolicyEditor({tr("A"), tr("B")}, page);
    auto* right = new QVBoxLayout;
    right->addWidget(policies_);
    goodput_ = new LabGoodputForm(page);
    right->addWidget(goodput_);
    right->addStretch(1);
    columns->addLayout(right);
    QScrollArea* scroll = sideScrolling(page, this);
    stackWhenNarrow(scroll, columns);
    return scroll;
}

QWidget* LabView::buildSummaryTable() {
    summary_ = new LabSummaryModel(this);
    summary_table_ = new QTableView(this);
    summary_table_->setModel(summary_);
    summary_table_->setAccessibleName(tr("Lab summary: the bench figures of each policy"));
    // Each column as wide as its header and figures; the table never narrower than its columns.
    summary_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    summary_table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    summary_table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Requests, failures, wall time, queue times and goodput's count are in the exported report, and
    // so are padding and peak KV (the charts show both): the table keeps to what compares, and at
    // 1280 px its latency columns pushed the window to 1348 px with those two shown.
    for (int c : {LabSummaryModel::Requests, LabSummaryModel::Failed, LabSummaryModel::WallS, LabSummaryModel::QueueP50,
                  LabSummaryModel::QueueP95, LabSummaryModel::QueueP99, LabSummaryModel::GoodputRequests,
                  LabSummaryModel::PaddingShare, LabSummaryModel::PeakKv})
        summary_table_->setColumnHidden(c, true);
    // Columns wider than the tab scroll (their figures stay whole) instead of widening the window:
    // the height keeps room for the scroll bar.
    summary_table_->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    summary_table_->setFixedHeight(2 * summary_table_->verticalHeader()->defaultSectionSize() +
                                   2 * summary_table_->fontMetrics().lineSpacing() + 8 +
                                   summary_table_->horizontalScrollBar()->sizeHint().height());
    return summary_table_;
}

// The summary, the key, the two timelines over the charts and the requests.
QWidget* LabView::buildResultsPage() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(buildSummaryTable());
    legend_ = new QLabel(page);   // one key for every chart and timeline: they share the colours
    legend_->setWordWrap(true);
    legend_->setAccessibleName(tr("Policy colours"));
    layout->addWidget(legend_);
    auto* split = new QSplitter(Qt::Vertical, page);
    timeline_a_ = new LabTimelineWidget(split);
    timeline_b_ = new LabTimelineWidget(split);
    tabs_ = new QTabWidget(split);
    charts_ = new LabCharts(tabs_);
    tabs_->addTab(charts_, tr("Charts (A and B overlaid)"));
    latency_charts_ = new LabLatencyCharts(tabs_);
    tabs_->addTab(latency_charts_, tr("Latency"));
    request_model_ = new LabRequestModel(this);
    request_table_ = new QTableView(tabs_);
    request_table_->setModel(request_model_);
    request_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    request_table_->setSelectionMode(QAbstractItemView::SingleSelection);
    request_table_->verticalHeader()->hide();
    request_table_->horizontalHeader()->setStretchLastSection(true);
    request_table_->setAccessibleName(tr("Lab requests of the selected policy"));
    std::vector<int> fitted;
    for (int c = 0; c < LabRequestModel::ColumnCount; ++c) fitted.push_back(c);
    new ColumnFitter(request_table_, fitted);
    tabs_->addTab(request_table_, tr("Requests"));
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 5);
    layout->addWidget(split, 1);
    return page;
}

void LabView::connectRunner() {
    connect(runner_, &LabRunner::started, this, [this] {
        timeline_a_->setRun(&runner_->data(0), run_policy_names_.value(0));
        timeline_b_->setRun(runner_->policyCount() > 1 ? &runner_->data(1) : nullptr, run_policy_names_.value(1));
        request_model_->setRun(&runner_->data(0));
        refreshSoon();
        refreshStatus();
    });
    connect(runner_, &LabRunner::updated, this, [this](int policy) {
        (policy == 0 ? timeline_a_ : timeline_b_)->runChanged();
        if (request_model_->run() == &runner_->data(policy)) request_model_->runChanged();
        if (!chart_timer_->isActive()) chart_timer_->start();
        refreshStatus();
    });
    connect(runner_, &LabRunner::policyStarted, this, [this](int policy) {
        request_model_->setRun(&runner_->data(policy));
        refreshStatus();
    });
    // The summary's figures at once (a table of a few cells), the charts in slices after.
    connect(runner_, &LabRunner::policyFinished, this, [this] {
        refreshSummary();
        refreshSoon();
    });
    connect(runner_, &LabRunner::finished, this, [this] {
        refreshLegend();
        refreshSummary();
        refreshSoon();
        refreshStatus();
    });
    connect(runner_, &LabRunner::failed, this, [this](const QString& message) {
        Q_EMIT errorOccurred(tr("The lab run failed"), message);
    });
}

// One row: what to run, how fast, and what to do with the result.
QWidget* LabView::buildControls() {
    auto* bar = new QWidget(this);
    auto* l = new QHBoxLayout(bar);
    l->setContentsMargins(0, 0, 0, 0);
    preset_ = new QPushButton(tr("Preset"), bar);
    preset_->setToolTip(tr("A small workload whose joins and leaves are plain to see; A continuous, B static"));
    run_ = new QPushButton(tr("Run A, then B"), bar);
    run_->setAccessibleName(tr("Run the workload under policy A, then policy B"));
    cancel_ = new QPushButton(tr("Cancel"), bar);
    pause_ = new QPushButton(tr("Pause"), bar);
    pause_->setCheckable(true);
    step_ = new QPushButton(tr("Step"), bar);
    step_->setEnabled(false);
    pace_ = new QSlider(Qt::Horizontal, bar);
    pace_->setRange(0, 1000);
    pace_->setSingleStep(10);
    pace_->setPageStep(100);
    pace_->setAccessibleName(tr("Minimum step duration, ms"));
    pace_->setToolTip(tr("Pace: slow the run down to at least this long a step (0: real time)"));
    pace_->setMinimumWidth(60);
    pace_label_ = new QLabel(bar);
    pace_label_->setMinimumWidth(pace_label_->fontMetrics().horizontalAdvance(tr("≥1000 ms/step")) + 4);
    export_ = new QPushButton(tr("Export run…"), bar);
    export_->setToolTip(tr("Markdown report, CSV of the steps, PNG of the charts"));
    for (QWidget* w : std::initializer_list<QWidget*>{preset_, run_, cancel_, pause_, step_}) l->addWidget(w);
    l->addStretch(1);
    l->addWidget(export_);
    connect(preset_, &QPushButton::clicked, this, &LabView::usePreset);
    connect(run_, &QPushButton::clicked, this, [this] { run(); });
    connect(cancel_, &QPushButton::clicked, runner_, &LabRunner::cancel);
    connect(export_, &QPushButton::clicked, this, &LabView::exportInteractively);
    connect(pause_, &QPushButton::toggled, this, [this](bool on) {
        runner_->setPaused(on);
        pause_->setText(on ? tr("Resume") : tr("Pause"));
        step_->setEnabled(on);
    });
    connect(step_, &QPushButton::clicked, runner_, &LabRunner::stepOnce);
    connect(pace_, &QSlider::valueChanged, this, &LabView::setMinStepMs);
    return bar;
}

void LabView::setMinStepMs(int ms) {
    if (pace_->value() != ms) pace_->setValue(ms);
    runner_->setMinStepMs(ms);
    pace_label_->setText(ms == 0 ? tr("real time") : tr("≥%1 ms/step").arg(ms));
}

void LabView::usePreset() {
    QStringList adapters;
    for (const auto& a : bridge_->adapters()) adapters << QString::fromStdString(a.name);
    form_->setWorkload(LabWorkloadForm::preset(adapters));
    // A token budget, not the engine's default budget in time: the preset is for comparing
    // policies, and with a token budget a run's steps are the same every time and the same as
    // `lorascope-cli bench --prefill-budget 16` on the exported workload (the budget in time follows
    // the step times this machine measures as it runs).
    EngineOptions a;
    a.max_batch_size = 8;
    a.prefill_budget_tokens = 16;
    EngineOptions b = a;
    b.static_batching = true;
    policies_->setPolicy(0, a);
    policies_->setPolicy(1, b);
}

void LabView::setAdapterNames(const QStringList& names) { form_->setAdapters(names); }

QStringList LabView::policyNames() const {
    return {tr("A: %1").arg(policies_->describe(0)), tr("B: %1").arg(policies_->describe(1))};
}

std::optional<LabView::Prepared> LabView::prepareWorkload() {
    if (!bridge_->hasEngine() || !bridge_->modelConfig()) {
        Q_EMIT errorOccurred(tr("No model loaded"), tr("Load a model before running a lab workload."));
        return std::nullopt;
    }
    const Workload workload = form_->workload();
    Prepared p;
    try {
        p.requests = workload_requests(workload, bridge_->modelConfig()->vocab_size());
    } catch (const Error& e) {
        Q_EMIT errorOccurred(tr("The workload cannot run"), QString::fromStdString(e.what()));
        return std::nullopt;
    }
    for (const auto& a : bridge_->adapters()) p.adapters.emplace_back(a.name, a.path);
    p.arrivals_s = arrival_times_s(workload.arrival, p.requests.size());
    return p;
}

bool LabView::run() {
    std::optional<Prepared> p = prepareWorkload();
    if (!p) return false;
    frontier_->cancel();   // one run at a time: two would share the machine and skew each other's times
    const EngineOptions base = bridge_->engineOptions();
    run_policy_names_ = policyNames();
    run_workload_json_ = QString::fromStdString(workload_to_json(form_->workload()));
    std::vector<LabPolicy> policies = {{QStringLiteral("A"), policies_->apply(0, base)}, {QStringLiteral("B"), policies_->apply(1, base)}};
    runner_->start(std::move(policies), std::move(p->requests), std::move(p->arrivals_s), std::move(p->adapters));
    pages_->setCurrentIndex(1);   // the results, as they come
    return true;
}

bool LabView::runSweep() {
    std::optional<Prepared> p = prepareWorkload();
    if (!p) return false;
    runner_->cancel();
    frontier_->setGoodputTargets(goodput_->targets());
    frontier_->start(policies_->apply(0, bridge_->engineOptions()), std::move(p->requests), std::move(p->arrivals_s),
                     std::move(p->adapters));
    pages_->setCurrentWidget(frontier_);
    return frontier_->runner()->isRunning();
}

// The charts one per turn of the event loop, then the summary: all at once took 40-60 ms of GUI
// time on a 500-request run (QtCharts lays out each series anew on every change), in which the
// window took no input (test_ui_lab_real_engine's fiveHundredRequestsKeepTheEventLoopTurning).
void LabView::refreshSoon() {
    if (slice_ >= 0) {
        slice_again_ = true;
        return;
    }
    slice_ = 0;
    slice_timer_->start();
}

std::vector<const LabRunData*> LabView::runs() const {
    std::vector<const LabRunData*> out;
    for (int i = 0; i < runner_->policyCount(); ++i) out.push_back(&runner_->data(i));
    return out;
}

void LabView::refreshSlice() {
    const std::vector<const LabRunData*> runs = this->runs();
    if (slice_ < charts_->chartCount()) {
        charts_->refreshChart(slice_++, runs, run_policy_names_);
        return;
    }
    if (slice_ == charts_->chartCount()) {
        latency_charts_->refresh(runs);
        ++slice_;
        return;
    }
    refreshLegend();
    refreshSummary();
    slice_ = slice_again_ ? 0 : -1;
    slice_again_ = false;
    if (slice_ < 0) slice_timer_->stop();
}

void LabView::refreshNow() {
    slice_timer_->stop();
    slice_ = -1;
    slice_again_ = false;
    const std::vector<const LabRunData*> runs = this->runs();
    charts_->refresh(runs, run_policy_names_);
    latency_charts_->refresh(runs);
    refreshLegend();
    refreshSummary();
}

void LabView::refreshLegend() {
    const QStringList names = runner_->policyCount() ? run_policy_names_ : policyNames();
    QString key;
    for (int i = 0; i < names.size(); ++i)
        key += QStringLiteral("<span style='color:%1'>&#9632;</span> %2&nbsp;&nbsp;&nbsp;").arg(LabCharts::policyColour(i).name(), names[i].toHtmlEscaped());
    legend_->setText(key);
}

void LabView::refreshSummary() {
    std::vector<std::optional<BenchFigures>> held;
    for (int i = 0; i < runner_->policyCount(); ++i) held.push_back(runner_->figures(i));
    std::vector<const BenchFigures*> figures;
    for (const auto& f : held) figures.push_back(f ? &*f : nullptr);
    // Rows are named A, B: the key above the charts says what each policy is.
    QStringList rows;
    for (int i = 0; i < policies_->policyCount(); ++i) rows << policies_->name(i);
    if (runner_->policyCount()) {
        rows.clear();
        for (int i = 0; i < runner_->policyCount(); ++i) rows << runner_->policy(i).name;
    }
    summary_->setFigures(rows, figures);
}

void LabView::refreshStatus() {
    run_->setEnabled(!runner_->isRunning());
    cancel_->setEnabled(runner_->isRunning());
    export_->setEnabled(!runner_->isRunning() && runner_->policyCount() > 0);
    const int p = runner_->currentPolicy();
    if (!runner_->isRunning() || p < 0 || p >= runner_->policyCount()) {
        status_->setText(runner_->policyCount() ? tr("Done: A and B compared on the Results page") : tr("Define a workload and press Run"));
        return;
    }
    const LabRunData& d = runner_->data(p);
    status_->setText(tr("Policy %1: step %2 · %3 of %4 requests finished")
                         .arg(runner_->policy(p).name).arg(d.steps().size()).arg(d.finishedCount()).arg(d.requests().size()));
}

void LabView::selectRequest(int policy, int request_index) {
    request_model_->setRun(&runner_->data(policy));
    timeline_a_->setSelected(policy == 0 ? request_index : -1);
    timeline_b_->setSelected(policy == 1 ? request_index : -1);
    const QModelIndex index = request_model_->index(request_index, 0);
    request_table_->selectionModel()->select(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    request_table_->scrollTo(index);
}

void LabView::loadWorkloadFile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load a workload"), QString(),
                                                      tr("Bench workloads (*.json);;JSON Lines prompts (*.jsonl);;All files (*)"));
    if (path.isEmpty()) return;
    try {
        form_->loadFile(path);
    } catch (const Error& e) {
        Q_EMIT errorOccurred(tr("Could not load the workload"), QString::fromStdString(e.what()));
    }
}

void LabView::saveWorkloadFile() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the workload"), QStringLiteral("workload.json"),
                                                      tr("Bench workloads (*.json)"));
    if (path.isEmpty()) return;
    QFile f(path);
    const QByteArray bytes = QByteArray::fromStdString(workload_to_json(form_->workload()));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size())
        Q_EMIT errorOccurred(tr("Could not save the workload"), tr("%1: %2").arg(path, f.errorString()));
}

QStringList LabView::exportTo(const QString& dir, QString* error) {
    refreshNow();
    LabExportInput in;
    in.runner = runner_;
    in.summary = summary_;
    in.charts = charts_;
    in.workload_json = run_workload_json_;
    in.policy_descriptions = run_policy_names_;
    in.model_dir = bridge_->modelDir();
    return exportLabRun(in, dir, error);
}

void LabView::exportInteractively() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export the lab run into"));
    if (dir.isEmpty()) return;
    QString error;
    exportTo(dir, &error);
    if (!error.isEmpty()) Q_EMIT errorOccurred(tr("Could not export the lab run"), error);
}

}  // namespace lorascope::ui
