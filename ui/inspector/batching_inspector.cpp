#include "inspector/batching_inspector.h"

#include <QChart>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include "common/format.h"
#include "inspector/batch_timeline_widget.h"
#include "inspector/server_metrics_view.h"
#include "inspector/step_stats_model.h"

namespace lorascope::ui {

BatchingInspector::BatchingInspector(StepStatsModel* model, ServerMetricsView* server_view, QWidget* parent)
    : QWidget(parent), model_(model), server_view_(server_view) {
    auto* layout = new QVBoxLayout(this);
    auto* controls = new QHBoxLayout;
    pause_ = new QPushButton(tr("Pause"), this);
    pause_->setCheckable(true);
    pause_->setAccessibleName(tr("Pause the engine between steps"));
    pause_->setToolTip(tr("Hold the engine between steps (F8)"));
    step_ = new QPushButton(tr("Step"), this);
    step_->setAccessibleName(tr("Run one engine step"));
    step_->setToolTip(tr("While paused, let exactly one step run (F10)"));
    step_->setEnabled(false);
    colour_by_ = new QComboBox(this);
    colour_by_->addItems({tr("Colour by request"), tr("Colour by adapter")});
    colour_by_->setAccessibleName(tr("Timeline colouring"));
    summary_ = new QLabel(tr("No engine steps yet"), this);
    summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    controls->addWidget(pause_);
    controls->addWidget(step_);
    controls->addWidget(colour_by_);
    controls->addWidget(summary_, 1);
    layout->addLayout(controls);

    pages_ = new QStackedWidget(this);
    auto* split = new QSplitter(Qt::Vertical, pages_);
    engine_page_ = split;
    auto* tabs = new QTabWidget(split);
    auto* charts_page = new QWidget(tabs);
    charts_.push_back(CompactChart::make(tr("Batch rows"), {tr("rows")}, QString()));
    charts_.push_back(CompactChart::make(tr("Padding share"), {tr("padding %")}, QStringLiteral("%")));
    charts_.push_back(CompactChart::make(tr("KV cache"), {tr("in use"), tr("allocated")}, QStringLiteral("MiB")));
    charts_.push_back(CompactChart::make(tr("Queue depth"), {tr("queued")}, QString()));
    charts_.push_back(CompactChart::make(tr("Step time"), {tr("ms")}, QStringLiteral("ms")));
    charts_.push_back(CompactChart::make(tr("Tokens per second"), {tr("tok/s")}, QString()));
    charts_[0].integer_y = charts_[3].integer_y = true;   // rows, queued requests
    std::vector<QChart*> charts;
    for (const auto& c : charts_) charts.push_back(c.chart);
    layoutChartGrid(charts_page, charts, 3, 110);
    tabs->addTab(charts_page, tr("Charts"));
    table_ = new QTableView(tabs);
    table_->setModel(model_);
    table_->setAccessibleName(tr("Engine steps"));
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    tabs->addTab(table_, tr("Step table"));
    timeline_ = new BatchTimelineWidget(model_, split);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    pages_->addWidget(split);
    if (server_view_) {
        server_view_->setParent(pages_);
        pages_->addWidget(server_view_);
    }
    layout->addWidget(pages_, 1);

    connect(pause_, &QPushButton::toggled, this, [this](bool on) {
        step_->setEnabled(on && pause_->isEnabled());
        pause_->setText(on ? tr("Resume") : tr("Pause"));
        Q_EMIT pauseToggled(on);
    });
    connect(step_, &QPushButton::clicked, this, &BatchingInspector::stepRequested);
    connect(colour_by_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this](int i) {
        timeline_->setColourBy(i == 0 ? BatchTimelineWidget::ColourBy::Request : BatchTimelineWidget::ColourBy::Adapter);
    });
    connect(model_, &StepStatsModel::samplesAppended, this, [this] {
        // Charts are costly to redraw: only while visible (showEvent catches up).
        if (isVisible()) refreshCharts();
        else dirty_ = true;
        if (table_->isVisible()) table_->scrollToBottom();
    });
    setEngineAvailable(false);
}

int BatchingInspector::pointCount(int chart) const { return int(charts_.at(size_t(chart)).series.front()->count()); }

void BatchingInspector::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    if (dirty_) refreshCharts();
}

void BatchingInspector::refreshCharts() {
    dirty_ = false;
    const auto& samples = model_->samples();
    const size_t first = samples.size() > size_t(kWindow) ? samples.size() - size_t(kWindow) : 0;
    std::vector<QList<QPointF>> points(7);
    for (size_t i = first; i < samples.size(); ++i) {
        const StepStats& s = samples[i].stats;
        const double x = double(s.step);
        points[0].append({x, double(s.rows)});
        points[1].append({x, 100.0 * StepStatsModel::paddingShare(s)});
        points[2].append({x, double(s.kv_bytes_in_use) / (1024.0 * 1024.0)});
        points[3].append({x, double(s.kv_bytes_allocated) / (1024.0 * 1024.0)});
        points[4].append({x, double(s.queue_depth)});
        points[5].append({x, s.wall_ms});
        points[6].append({x, StepStatsModel::tokensPerSecond(s)});
    }
    const std::vector<std::vector<int>> chart_points = {{0}, {1}, {2, 3}, {4}, {5}, {6}};
    for (size_t c = 0; c < charts_.size(); ++c) {
        std::vector<QList<QPointF>> pts;
        for (int k : chart_points[c]) pts.push_back(std::move(points[size_t(k)]));
        charts_[c].setPoints(pts);
    }
    if (!samples.empty() && !remote_) {
        const StepStats& s = samples.back().stats;
        summary_->setText(tr("step %1 · %2 rows · queue %3 · pad %4% · KV %5, %6/%7 blocks, moved %8 · %9 ms")
                              .arg(s.step).arg(s.rows).arg(s.queue_depth)
                              .arg(100.0 * StepStatsModel::paddingShare(s), 0, 'f', 1)
                              .arg(humanBytes(s.kv_bytes_in_use))
                              .arg(s.kv_blocks_used).arg(s.kv_blocks_total)
                              .arg(humanBytes(s.cache_bytes_moved))
                              .arg(s.wall_ms, 0, 'f', 1));
    }
}

void BatchingInspector::setPaused(bool paused) {
    if (pause_->isChecked() != paused) pause_->setChecked(paused);
}

void BatchingInspector::setEngineAvailable(bool available) {
    engine_available_ = available;
    const bool holdable = available && !remote_;
    pause_->setEnabled(holdable);
    step_->setEnabled(holdable && pause_->isChecked());
}

void BatchingInspector::setRemote(bool remote) {
    remote_ = remote && server_view_;
    pages_->setCurrentWidget(remote_ ? static_cast<QWidget*>(server_view_) : engine_page_);
    colour_by_->setEnabled(!remote_);
    const QString why = tr("A remote server publishes no engine steps, and a shared server is not ours to pause");
    pause_->setToolTip(remote_ ? why : tr("Hold the engine between steps (F8)"));
    step_->setToolTip(remote_ ? why : tr("While paused, let exactly one step run (F10)"));
    summary_->setText(remote_ ? tr("Remote server: no engine steps to show")
                              : tr("No engine steps yet"));
    if (!remote_ && !model_->samples().empty()) refreshCharts();
    setEngineAvailable(engine_available_);
}

}  // namespace lorascope::ui
