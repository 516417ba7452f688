#include "inspector/server_metrics_view.h"

#include <QChart>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "remote/server_metrics.h"
#include "requests/client_timings.h"
#include "requests/request_table_model.h"

namespace lorascope::ui {

namespace {

QString ms_text(const std::optional<double>& v) {
    if (!v) return QStringLiteral("–");
    return QString::number(*v, 'f', *v < 10 ? 1 : 0);
}

QString seconds_text(int ms) { return QString::number(ms / 1000.0, 'g', 3); }

// Which model columns each chart plots, one series per column.
const std::vector<std::vector<int>>& chart_columns() {
    using M = ServerMetricsModel;
    static const std::vector<std::vector<int>> columns = {
        {M::ColBatch}, {M::ColQueue}, {M::ColPrefillMs, M::ColDecodeMs},
        {M::ColKvPercent}, {M::ColPerTokenMs, M::ColTtftMs}, {M::ColStepsPerSec}};
    return columns;
}

}  // namespace

ServerMetricsView::ServerMetricsView(ServerMetricsModel* metrics, RequestTableModel* requests, QWidget* parent)
    : QWidget(parent), metrics_(metrics), requests_(requests) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    title_ = new QLabel(this);
    title_->setWordWrap(true);
    title_->setAccessibleName(tr("What the server page shows"));
    state_ = new QLabel(this);
    state_->setWordWrap(true);
    state_->setAccessibleName(tr("Server metrics state"));
    state_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(title_);
    layout->addWidget(state_);

    auto* tabs = new QTabWidget(this);
    auto* charts_page = new QWidget(tabs);
    const QString x_suffix = QStringLiteral(" s");   // after each label
    const auto points = CompactChart::Style::Points;
    charts_.push_back(CompactChart::make(tr("Server batch size"), {tr("rows")}, QString(), x_suffix));
    charts_.push_back(CompactChart::make(tr("Server queue length"), {tr("waiting")}, QString(), x_suffix));
    charts_.push_back(CompactChart::make(tr("Server step time"), {tr("prefill"), tr("decode")}, QStringLiteral("ms"),
                                           x_suffix, points));
    charts_.push_back(CompactChart::make(tr("Server KV cache"), {tr("in use")}, QStringLiteral("%"), x_suffix));
    charts_.push_back(CompactChart::make(tr("Server request latency"), {tr("per token"), tr("first token")},
                                           QStringLiteral("ms"), x_suffix, points));
    charts_.push_back(CompactChart::make(tr("Server steps per second"), {tr("steps/s")}, QString(), x_suffix));
    charts_[0].integer_y = charts_[1].integer_y = true;   // rows, requests
    std::vector<QChart*> charts;
    for (const auto& c : charts_) charts.push_back(c.chart);
    layoutChartGrid(charts_page, charts, 3, 110);
    tabs->addTab(charts_page, tr("Server charts"));
    table_ = new QTableView(tabs);
    table_->setModel(metrics_);
    table_->setAccessibleName(tr("Server metrics polls"));
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    tabs->addTab(table_, tr("Poll table"));
    layout->addWidget(tabs, 1);

    client_ = new QLabel(this);
    client_->setWordWrap(true);
    client_->setAccessibleName(tr("Client-measured request timings"));
    layout->addWidget(client_);

    connect(metrics_, &ServerMetricsModel::pointAppended, this, &ServerMetricsView::refresh);
    connect(metrics_, &ServerMetricsModel::stateChanged, this, &ServerMetricsView::refreshState);
    connect(requests_, &RequestTableModel::requestFinished, this, &ServerMetricsView::refreshClientTimings);
    connect(requests_, &QAbstractItemModel::modelReset, this, &ServerMetricsView::refreshClientTimings);
    refreshState();
    refreshClientTimings();
}

int ServerMetricsView::pointCount(int chart, int series) const {
    return int(charts_.at(size_t(chart)).series.at(size_t(series))->count());
}

void ServerMetricsView::showEvent(QShowEvent* e) {
    QWidget::showEvent(e);
    if (dirty_) refreshCharts();
}

void ServerMetricsView::refresh() {
    refreshState();
    // Charts are costly to redraw: only while visible (showEvent catches up).
    if (isVisible()) refreshCharts();
    else dirty_ = true;
}

void ServerMetricsView::refreshCharts() {
    dirty_ = false;
    const auto& points = metrics_->points();
    const size_t first = points.size() > size_t(kWindow) ? points.size() - size_t(kWindow) : 0;
    for (size_t c = 0; c < charts_.size(); ++c) {
        std::vector<QList<QPointF>> series;
        for (int column : chart_columns()[c]) {
            QList<QPointF> pts;
            for (size_t i = first; i < points.size(); ++i)
                if (const auto v = ServerMetricsModel::pointValue(points[i], column)) pts.append({points[i].t_s, *v});
            series.push_back(std::move(pts));
        }
        charts_[c].setPoints(series);
    }
}

void ServerMetricsView::refreshState() {
    using State = ServerMetricsModel::State;
    const QString url = metrics_->url().toHtmlEscaped();
    title_->setText(tr("<b>Server-side aggregates</b>, polled from <tt>GET %1</tt> every %2 s: the server's "
                       "gauges as they were at each poll (lines), and its histograms' means and counters' rates "
                       "over the time between two polls (dots: only where steps ran). Not per-step engine data.")
                        .arg(url.isEmpty() ? tr("/metrics") : url, seconds_text(metrics_->intervalMs())));
    QString text;
    bool problem = true;
    switch (metrics_->state()) {
    case State::Stopped:
        text = tr("Not polling: no remote server is loaded.");
        problem = false;
        break;
    case State::Waiting:
        text = tr("Waiting for the first answer from %1…").arg(url);
        problem = false;
        break;
    case State::Live:
        text = tr("Live: %1 metrics, %2 polls, the last at %3 s.")
                   .arg(flavorName(metrics_->flavor()))
                   .arg(metrics_->polls())
                   .arg(metrics_->lastPollS(), 0, 'f', 1);
        problem = false;
        break;
    case State::Unreachable:
        text = tr("/metrics unreachable: %1.").arg(metrics_->message().toHtmlEscaped());
        break;
    case State::HttpError:
        text = tr("/metrics refused: %1.").arg(metrics_->message().toHtmlEscaped());
        break;
    case State::Unrecognised:
        text = tr("/metrics answered, but %1.").arg(metrics_->message().toHtmlEscaped());
        break;
    }
    if (problem)
        text = QStringLiteral("<span style='color:#b00020'>&#9888; %1 Next try in %2 s (backing off while it fails); "
                              "the charts keep what was polled before.</span>")
                   .arg(text, seconds_text(metrics_->retryInMs()));
    state_->setText(text);
}

void ServerMetricsView::refreshClientTimings() {
    const ClientTimings t = clientTimings(requests_->records());
    client_->setText(tr("<b>Measured by this window</b>, per request (client clocks, network included): %1 finished · "
                        "time to first token p50 %2 ms, p95 %3 ms · per later token p50 %4 ms, p95 %5 ms. "
                        "Every request's own figures are on the request board.")
                         .arg(t.finished)
                         .arg(ms_text(t.ttft_p50_ms), ms_text(t.ttft_p95_ms), ms_text(t.per_token_p50_ms),
                              ms_text(t.per_token_p95_ms)));
}

}  // namespace lorascope::ui
