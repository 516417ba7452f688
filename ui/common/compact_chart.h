// The small line charts of the batching inspector and the lab (engine steps or server polls across,
// a value up), in one compact style, laid out in grids.
#pragma once

#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <vector>

class QChart;
class QWidget;
class QXYSeries;
class QValueAxis;

namespace lorascope::ui {

struct CompactChart {
    QChart* chart = nullptr;
    std::vector<QXYSeries*> series;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
    bool integer_y = false;   // a count (rows, requests): whole-number ticks
    QString x_suffix;         // after each x label (" s")

    enum class Style { Lines, Points };
    // `unit` joins the title in parentheses; a legend is shown for more than one series. Points
    // (a scatter) suit values that exist only now and then (a mean over an interval with steps in
    // it): lines would join them across the gaps.
    static CompactChart make(const QString& title, const QStringList& series_names, const QString& unit,
                               const QString& x_suffix = QString(), Style style = Style::Lines);
    // Replaces every series' points and fits the axes: x over the points, y from 0 to above the top.
    void setPoints(const std::vector<QList<QPointF>>& points_per_series);
};

// The compact style of the inspector's and the lab's small charts: thin margins, square corners,
// small title and axis labels.
void styleCompactChart(QChart* chart, QValueAxis* x, QValueAxis* y);

// Lays `charts` out on `page` (which gets the layout) in a ChartGrid (common/chart_grid.h) that
// scrolls: up to `columns` across, each in an antialiased view at least `min_height` tall and as
// large as its texts need, named for accessibility by its title.
void layoutChartGrid(QWidget* page, const std::vector<QChart*>& charts, int columns, int min_height);

// Fits `axis` to [lo, hi] with ticks at 1, 2 or 5 times a power of ten (at least 1 for counts).
// `suffix` follows each label (" s").
void setNiceAxisRange(QValueAxis* axis, double lo, double hi, bool integer, const QString& suffix = QString());

}  // namespace lorascope::ui
