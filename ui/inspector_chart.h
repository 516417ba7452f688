// One small line chart of the batching inspector (engine steps or server polls across, a value up),
// in the inspector's compact style.
#pragma once

#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <vector>

class QChart;
class QXYSeries;
class QValueAxis;

namespace lorascope::ui {

struct InspectorChart {
    QChart* chart = nullptr;
    std::vector<QXYSeries*> series;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;

    enum class Style { Lines, Points };
    // `unit` joins the title in parentheses; a legend is shown for more than one series. Points
    // (a scatter) suit values that exist only now and then (a mean over an interval with steps in
    // it): lines would join them across the gaps.
    static InspectorChart make(const QString& title, const QStringList& series_names, const QString& unit,
                               const QString& x_format = QStringLiteral("%d"), Style style = Style::Lines);
    // Replaces every series' points and fits the axes: x over the points, y from 0 to above the top.
    void setPoints(const std::vector<QList<QPointF>>& points_per_series);
};

}  // namespace lorascope::ui
