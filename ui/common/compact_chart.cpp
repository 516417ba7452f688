#include "common/compact_chart.h"

#include <QChart>
#include <QChartView>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "common/chart_grid.h"
#include "common/theme.h"

namespace lorascope::ui {

namespace {
// A chart view whose chart follows the palette, also when the theme changes while it is shown.
class PaletteChartView : public QChartView {
public:
    PaletteChartView(QChart* chart, QWidget* parent) : QChartView(chart, parent) { applyPalette(chart, palette()); }

protected:
    void changeEvent(QEvent* e) override {
        QChartView::changeEvent(e);
        if (e->type() == QEvent::PaletteChange) applyPalette(chart(), palette());
    }
};
}  // namespace

void styleCompactChart(QChart* chart, QValueAxis* x, QValueAxis* y) {
    chart->setMargins(QMargins(2, 2, 2, 2));
    chart->setBackgroundRoundness(0);
    QFont f = chart->titleFont();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    chart->setTitleFont(f);
    QFont lf = x->labelsFont();
    lf.setPointSizeF(lf.pointSizeF() * 0.8);
    x->setLabelsFont(lf);
    y->setLabelsFont(lf);
}

void layoutChartGrid(QWidget* page, const std::vector<QChart*>& charts, int columns, int min_height) {
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(page);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidgetResizable(true);
    auto* grid = new ChartGrid(columns, min_height, scroll);
    for (QChart* chart : charts) {
        auto* view = new PaletteChartView(chart, grid);
        view->setRenderHint(QPainter::Antialiasing);
        view->setAccessibleName(chart->title());
        grid->addView(view);
    }
    scroll->setWidget(grid);
    layout->addWidget(scroll);
}

CompactChart CompactChart::make(const QString& title, const QStringList& names, const QString& unit,
                                    const QString& x_suffix, Style style) {
    CompactChart c;
    c.chart = new QChart;
    c.chart->setTitle(unit.isEmpty() ? title : QStringLiteral("%1 (%2)").arg(title, unit));
    c.chart->legend()->setVisible(names.size() > 1);
    c.chart->legend()->setAlignment(Qt::AlignBottom);
    c.x = new QValueAxis(c.chart);
    c.y = new QValueAxis(c.chart);
    styleCompactChart(c.chart, c.x, c.y);
    c.x_suffix = x_suffix;
    c.x->setTickCount(3);
    c.y->setTickCount(4);
    c.chart->addAxis(c.x, Qt::AlignBottom);
    c.chart->addAxis(c.y, Qt::AlignLeft);
    for (const QString& name : names) {
        QXYSeries* s = nullptr;
        if (style == Style::Points) {
            auto* scatter = new QScatterSeries(c.chart);
            scatter->setMarkerSize(6);
            scatter->setBorderColor(Qt::transparent);
            s = scatter;
        } else {
            s = new QLineSeries(c.chart);
        }
        s->setName(name);
        c.chart->addSeries(s);
        s->attachAxis(c.x);
        s->attachAxis(c.y);
        c.series.push_back(s);
    }
    return c;
}

// Ticks at 1, 2 or 5 times a power of ten, at least 1 for counts, so that "4.4 rows" never shows.
void setNiceAxisRange(QValueAxis* axis, double lo, double hi, bool integer, const QString& suffix) {
    if (!(hi > lo)) hi = lo + 1;
    // Horizontal labels ("4000") need more room than vertical ones: fewer ticks across.
    const double raw = (hi - lo) / (axis->orientation() == Qt::Horizontal ? 3.0 : 4.0);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
    if (integer) step = std::max(1.0, std::round(step));
    const double top = std::ceil(hi / step) * step;
    const double bottom = std::floor(lo / step) * step;
    if (axis->tickType() == QValueAxis::TicksDynamic && axis->tickInterval() == step && axis->min() == bottom && axis->max() == top)
        return;   // every change re-lays out the series: only real ones
    // Never a wide range under a small interval, not even between two calls: that made thousands
    // of ticks for a moment, which took seconds on a 500-request run.
    if (axis->tickType() != QValueAxis::TicksDynamic || step >= axis->tickInterval()) {
        axis->setTickInterval(step);
        axis->setRange(bottom, top);
    } else {
        axis->setRange(bottom, top);
        axis->setTickInterval(step);
    }
    axis->setTickAnchor(0);
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setLabelFormat((integer || step >= 1 ? QStringLiteral("%.0f") : step >= 0.1 ? QStringLiteral("%.1f") : QStringLiteral("%.2g")) +
                         suffix);
}

void CompactChart::setPoints(const std::vector<QList<QPointF>>& points) {
    double lo_x = 0, hi_x = 1, hi_y = 1;
    bool any = false;
    for (size_t k = 0; k < series.size() && k < points.size(); ++k) {
        const auto& pts = points[k];
        series[k]->replace(pts);
        if (pts.isEmpty()) continue;
        lo_x = any ? qMin(lo_x, pts.front().x()) : pts.front().x();
        hi_x = any ? qMax(hi_x, pts.back().x()) : pts.back().x();
        any = true;
        for (const QPointF& p : pts) hi_y = qMax(hi_y, p.y());
    }
    // x: time or steps; y: counts (batch rows, queue) get whole-number ticks.
    setNiceAxisRange(x, lo_x, qMax(hi_x, lo_x + 1), false, x_suffix);
    setNiceAxisRange(y, 0, hi_y * 1.05, integer_y);
}

}  // namespace lorascope::ui
