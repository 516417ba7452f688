#include "inspector_chart.h"

#include <QChart>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

namespace lorascope::ui {

InspectorChart InspectorChart::make(const QString& title, const QStringList& names, const QString& unit,
                                    const QString& x_format, Style style) {
    InspectorChart c;
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
    c.x->setLabelFormat(x_format);
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

void InspectorChart::setPoints(const std::vector<QList<QPointF>>& points) {
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
    x->setRange(lo_x, qMax(hi_x, lo_x + 1));
    y->setRange(0, hi_y * 1.1);
}

}  // namespace lorascope::ui
