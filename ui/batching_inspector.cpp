#include "batching_inspector.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include "adapter_list_model.h"   // humanBytes
#include "batch_timeline_widget.h"
#include "step_stats_model.h"

namespace lorascope::ui {

BatchingInspector::BatchingInspector(StepStatsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
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

    auto* split = new QSplitter(Qt::Vertical, this);
    auto* tabs = new QTabWidget(split);
    auto* charts_page = new QWidget(tabs);
    auto* grid = new QGridLayout(charts_page);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(2);
    charts_.push_back(makeChart(tr("Batch rows"), {tr("rows")}, QString()));
    charts_.push_back(makeChart(tr("Padding share"), {tr("padding %")}, QStringLiteral("%")));
    charts_.push_back(makeChart(tr("KV cache"), {tr("in use"), tr("allocated")}, QStringLiteral("MiB")));
    charts_.push_back(makeChart(tr("Queue depth"), {tr("queued")}, QString()));
    charts_.push_back(makeChart(tr("Step time"), {tr("ms")}, QStringLiteral("ms")));
    charts_.push_back(makeChart(tr("Tokens per second"), {tr("tok/s")}, QString()));
    for (size_t i = 0; i < charts_.size(); ++i) {
        auto* view = new QChartView(charts_[i].chart, charts_page);
        view->setRenderHint(QPainter::Antialiasing);
        view->setMinimumHeight(110);
        view->setAccessibleName(charts_[i].chart->title());
        grid->addWidget(view, int(i / 3), int(i % 3));
    }
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
    layout->addWidget(split, 1);

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

BatchingInspector::Chart BatchingInspector::makeChart(const QString& title, const QStringList& names, const QString& unit) {
    Chart c;
    c.chart = new QChart;
    c.chart->setTitle(unit.isEmpty() ? title : QStringLiteral("%1 (%2)").arg(title, unit));
    c.chart->legend()->setVisible(names.size() > 1);
    c.chart->legend()->setAlignment(Qt::AlignBottom);
    c.chart->setMargins(QMargins(2, 2, 2, 2));
    c.chart->setBackgroundRoundness(0);
    QFont f = c.chart->titleFont();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    c.chart->setTitleFont(f);
    c.x = new QValueAxis(c.chart);
    c.y = new QValueAxis(c.chart);
    c.x->setLabelFormat(QStringLiteral("%d"));
    c.x->setTickCount(3);
    c.y->setTickCount(4);
    c.y->setLabelFormat(QStringLiteral("%.3g"));
    QFont lf = c.x->labelsFont();
    lf.setPointSizeF(lf.pointSizeF() * 0.8);
    c.x->setLabelsFont(lf);
    c.y->setLabelsFont(lf);
    c.chart->addAxis(c.x, Qt::AlignBottom);
    c.chart->addAxis(c.y, Qt::AlignLeft);
    for (const QString& name : names) {
        auto* s = new QLineSeries(c.chart);
        s->setName(name);
        c.chart->addSeries(s);
        s->attachAxis(c.x);
        s->attachAxis(c.y);
        c.series.push_back(s);
    }
    return c;
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
        double lo_x = 0, hi_x = 1, hi_y = 1;
        for (size_t k = 0; k < chart_points[c].size(); ++k) {
            const auto& pts = points[size_t(chart_points[c][k])];
            charts_[c].series[k]->replace(pts);
            if (!pts.isEmpty()) {
                lo_x = pts.front().x();
                hi_x = qMax(pts.back().x(), lo_x + 1);
                for (const QPointF& p : pts) hi_y = qMax(hi_y, p.y());
            }
        }
        charts_[c].x->setRange(lo_x, hi_x);
        charts_[c].y->setRange(0, hi_y * 1.1);
    }
    if (!samples.empty()) {
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
    pause_->setEnabled(available);
    step_->setEnabled(available && pause_->isChecked());
}

}  // namespace lorascope::ui
