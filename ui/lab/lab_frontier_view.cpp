#include "lab/lab_frontier_view.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>

#include "common/compact_chart.h"
#include "lab/lab_summary_model.h"

namespace lorascope::ui {

QColor LabFrontierView::settingColour(int setting, bool reference) {
    if (reference) return QColor(0x30, 0x30, 0x30);
    static const QColor colours[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xe6, 0x6a, 0x00), QColor(0x2c, 0xa0, 0x2c),
                                     QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                     QColor(0xe3, 0x77, 0xc2), QColor(0x17, 0xbe, 0xcf)};
    return colours[setting % 8];
}

LabFrontierView::LabFrontierView(EngineFactory factory, QWidget* parent)
    : QWidget(parent), runner_(new LabRunner(std::move(factory), this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(buildControls());
    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setAccessibleName(tr("Frontier sweep status"));
    layout->addWidget(status_);
    key_ = new QLabel(this);   // one key for both charts: a colour per setting
    key_->setWordWrap(true);
    key_->setAccessibleName(tr("Frontier settings' colours"));
    layout->addWidget(key_);
    auto* charts = new QWidget(this);
    ttft_chart_ = makeChart(tr("Throughput against TTFT p50"), tr("TTFT p50, ms"), &ttft_x_, &ttft_y_);
    tpot_chart_ = makeChart(tr("Throughput against per-token p95"), tr("per-token p95, ms"), &tpot_x_, &tpot_y_);
    layoutChartGrid(charts, {ttft_chart_, tpot_chart_}, 2, 160);
    layout->addWidget(charts, 1);
    summary_ = new LabSummaryModel(this);
    table_ = new QTableView(this);
    table_->setModel(summary_);
    table_->setAccessibleName(tr("Frontier: the bench figures of each setting"));
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // What the charts plot and what decides between settings; the rest is in the A/B summary.
    const int shown[] = {LabSummaryModel::TokensPerS, LabSummaryModel::TtftP50, LabSummaryModel::PerTokenP95,
                         LabSummaryModel::E2eP95, LabSummaryModel::Goodput, LabSummaryModel::MeanRows, LabSummaryModel::Steps};
    for (int c = 0; c < LabSummaryModel::FigureCount; ++c)
        table_->setColumnHidden(c, std::find(std::begin(shown), std::end(shown), c) == std::end(shown));
    table_->setMinimumHeight(4 * table_->fontMetrics().lineSpacing());
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    layout->addWidget(table_);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &LabFrontierView::refreshStatus);

    connect(runner_, &LabRunner::updated, this, [this] { refreshStatus(); });
    connect(runner_, &LabRunner::policyFinished, this, &LabFrontierView::refresh);
    connect(runner_, &LabRunner::finished, this, [this] {
        refresh();
        refreshStatus();
    });
    connect(runner_, &LabRunner::failed, this, [this](const QString& message) {
        Q_EMIT errorOccurred(tr("The frontier sweep failed"), message);
    });
    setSweep(LabSweepKind::PrefillBudget, {4, 16, 64});
    refresh();
    refreshStatus();
}

QWidget* LabFrontierView::buildControls() {
    auto* bar = new QWidget(this);
    auto* l = new QHBoxLayout(bar);
    l->setContentsMargins(0, 0, 0, 0);
    kind_ = new QComboBox(bar);
    kind_->addItem(tr("Prefill budget (tokens)"), int(LabSweepKind::PrefillBudget));
    kind_->addItem(tr("Per-token target (ms)"), int(LabSweepKind::TpotTarget));
    kind_->setAccessibleName(tr("Frontier: what the sweep varies"));
    kind_->setToolTip(tr("Each value runs the lab's workload under policy A with that setting; static batching runs first "
                         "as the reference"));
    values_ = new QLineEdit(bar);
    values_->setAccessibleName(tr("Frontier: the sweep's values"));
    values_->setToolTip(tr("Up to %1 positive whole numbers, separated by commas").arg(kMaxSweepValues));
    run_ = new QPushButton(tr("Run sweep"), bar);
    run_->setAccessibleName(tr("Run the workload under every setting of the sweep"));
    cancel_ = new QPushButton(tr("Cancel"), bar);
    load_a_ = new QPushButton(tr("Load into A"), bar);
    load_b_ = new QPushButton(tr("Load into B"), bar);
    for (QPushButton* b : {load_a_, load_b_})
        b->setToolTip(tr("The selected setting's policy into the policy editor (click a point or a row to select it)"));
    l->addWidget(new QLabel(tr("Sweep"), bar));
    l->addWidget(kind_);
    l->addWidget(values_, 1);
    for (QPushButton* b : {run_, cancel_, load_a_, load_b_}) l->addWidget(b);
    connect(run_, &QPushButton::clicked, this, &LabFrontierView::runRequested);
    connect(cancel_, &QPushButton::clicked, this, &LabFrontierView::cancel);
    for (int policy : {0, 1})
        connect(loadButton(policy), &QPushButton::clicked, this, [this, policy] {
            const int i = selectedSetting();
            if (i >= 0) Q_EMIT loadRequested(policy, runner_->policy(i).options);
        });
    return bar;
}

QChart* LabFrontierView::makeChart(const QString& title, const QString& x_title, QValueAxis** x, QValueAxis** y) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->legend()->hide();   // the key above both charts names the settings
    *x = new QValueAxis(chart);
    *y = new QValueAxis(chart);
    styleCompactChart(chart, *x, *y);
    for (QValueAxis* a : {*x, *y}) a->setTitleFont((*x)->labelsFont());
    (*x)->setTitleText(x_title);
    (*y)->setTitleText(tr("tokens/s"));
    chart->addAxis(*x, Qt::AlignBottom);
    chart->addAxis(*y, Qt::AlignLeft);
    setNiceAxisRange(*x, 0, 1, false);
    setNiceAxisRange(*y, 0, 1, false);
    return chart;
}

LabSweepKind LabFrontierView::sweepKind() const { return LabSweepKind(kind_->currentData().toInt()); }

void LabFrontierView::setSweep(LabSweepKind kind, const QList<int>& values) {
    kind_->setCurrentIndex(kind_->findData(int(kind)));
    QStringList parts;
    for (int v : values) parts << QString::number(v);
    values_->setText(parts.join(QStringLiteral(", ")));
}

QList<int> LabFrontierView::sweepValues(QString* error) const { return parseSweepValues(values_->text(), error); }

void LabFrontierView::start(const EngineOptions& base, std::vector<Request> requests, std::vector<double> arrivals_s,
                            AdapterDirs adapters) {
    QString error;
    const QList<int> values = sweepValues(&error);
    if (values.isEmpty()) {
        Q_EMIT errorOccurred(tr("The sweep cannot run"), error);
        return;
    }
    runner_->start(labSweepPolicies(base, sweepKind(), values), std::move(requests), std::move(arrivals_s), std::move(adapters));
    refresh();
    refreshStatus();
}

void LabFrontierView::cancel() {
    runner_->cancel();
    refreshStatus();
}

void LabFrontierView::setGoodputTargets(const LatencyTargets& targets) {
    runner_->setGoodputTargets(targets);
    refresh();
}

std::vector<LabFrontierView::Point> LabFrontierView::points() const {
    std::vector<Point> out;
    for (int i = 0; i < runner_->policyCount(); ++i) {
        const LabRunData& d = runner_->data(i);
        if (!d.hasFigures()) continue;
        const BenchFigures& f = d.figures();
        out.push_back({runner_->policy(i).name, runner_->policy(i).options.static_batching, f.tokens_per_s, f.ttft_p50_ms,
                       f.per_token_p95_ms});
    }
    return out;
}

// One scatter series per setting (its colour; the reference as a square), and a line through
// the sweep's points in sweep order: the frontier.
void LabFrontierView::plot(QChart* chart, QValueAxis* x, QValueAxis* y, const std::vector<QPointF>& points) {
    chart->removeAllSeries();
    const std::vector<Point> settings = this->points();
    auto* line = new QLineSeries(chart);
    line->setPen(QPen(QColor(0x80, 0x80, 0x80), 1.0, Qt::DashLine));
    double hi_x = 0, hi_y = 0;
    for (size_t i = 0; i < points.size() && i < settings.size(); ++i) {
        auto* s = new QScatterSeries(chart);
        s->setName(settings[i].name);
        s->setMarkerShape(settings[i].reference ? QScatterSeries::MarkerShapeRectangle : QScatterSeries::MarkerShapeCircle);
        s->setMarkerSize(10);
        s->setColor(settingColour(int(i) - 1, settings[i].reference));
        s->setBorderColor(Qt::transparent);
        s->append(points[i]);
        connect(s, &QScatterSeries::clicked, this, [this, i] { selectSetting(int(i)); });
        chart->addSeries(s);
        if (!settings[i].reference) line->append(points[i]);
        hi_x = std::max(hi_x, points[i].x());
        hi_y = std::max(hi_y, points[i].y());
    }
    chart->addSeries(line);
    for (QAbstractSeries* s : chart->series()) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
    setNiceAxisRange(x, 0, hi_x > 0 ? hi_x * 1.05 : 1.0, false);
    setNiceAxisRange(y, 0, hi_y > 0 ? hi_y * 1.05 : 1.0, false);
}

void LabFrontierView::refresh() {
    std::vector<QPointF> ttft, tpot;
    QString key;
    const std::vector<Point> settings = points();
    for (size_t i = 0; i < settings.size(); ++i) {
        const Point& p = settings[i];
        ttft.push_back({p.ttft_p50_ms, p.tokens_per_s});
        tpot.push_back({p.per_token_p95_ms, p.tokens_per_s});
        key += QStringLiteral("<span style='color:%1'>%2</span> %3&nbsp;&nbsp;&nbsp;")
                   .arg(settingColour(int(i) - 1, p.reference).name(), p.reference ? QStringLiteral("&#9632;") : QStringLiteral("&#9679;"),
                        p.name.toHtmlEscaped());
    }
    plot(ttft_chart_, ttft_x_, ttft_y_, ttft);
    plot(tpot_chart_, tpot_x_, tpot_y_, tpot);
    key_->setText(key);
    QStringList rows;
    std::vector<std::optional<BenchFigures>> held;
    for (int i = 0; i < runner_->policyCount(); ++i) {
        rows << runner_->policy(i).name;
        held.push_back(runner_->figures(i));
    }
    std::vector<const BenchFigures*> figures;
    for (const auto& f : held) figures.push_back(f ? &*f : nullptr);
    summary_->setFigures(rows, figures);
}

void LabFrontierView::selectSetting(int setting) {
    if (setting < 0 || setting >= summary_->rowCount()) {
        table_->clearSelection();
        return;
    }
    table_->selectRow(setting);
}

int LabFrontierView::selectedSetting() const {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    return rows.isEmpty() || rows.front().row() >= runner_->policyCount() ? -1 : rows.front().row();
}

void LabFrontierView::refreshStatus() {
    run_->setEnabled(!runner_->isRunning());
    for (QPushButton* b : {load_a_, load_b_}) b->setEnabled(selectedSetting() >= 0);
    cancel_->setEnabled(runner_->isRunning());
    const int p = runner_->currentPolicy();
    if (runner_->isRunning() && p >= 0 && p < runner_->policyCount()) {
        status_->setText(tr("Setting %1 of %2 (%3): %4 of %5 requests finished")
                             .arg(p + 1).arg(runner_->policyCount()).arg(runner_->policy(p).name)
                             .arg(runner_->data(p).finishedCount()).arg(runner_->data(p).requests().size()));
        return;
    }
    status_->setText(runner_->policyCount() ? tr("Each point is one setting's run of the lab's workload under policy A")
                                            : tr("Runs the lab's workload under policy A at each setting, and static "
                                                 "batching as the reference"));
}

}  // namespace lorascope::ui
