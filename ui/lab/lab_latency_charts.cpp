#include "lab/lab_latency_charts.h"

#include <QChart>
#include <QChartView>
#include <QLegend>
#include <QPen>
#include <QXYSeries>

#include "lab/lab_charts.h"
#include "lab/lab_run_data.h"

namespace lorascope::ui {

namespace {
constexpr int kPolicies = 2;   // A and B
}  // namespace

LabLatencyCharts::LabLatencyCharts(QWidget* parent) : QWidget(parent) {
    const QStringList names = {QStringLiteral("A"), QStringLiteral("B")};
    charts_.push_back(CompactChart::make(tr("End-to-end latency, CDF"), names, tr("% of requests"), tr(" ms")));
    charts_.push_back(CompactChart::make(tr("Queue time, CDF"), names, tr("% of requests"), tr(" ms")));
    std::vector<QChart*> charts;
    for (CompactChart& c : charts_) {
        c.chart->legend()->hide();   // the lab shows one key above all its charts
        for (int k = 0; k < kPolicies; ++k) {
            QPen pen(LabCharts::policyColour(k));
            pen.setWidthF(1.6);
            c.series[size_t(k)]->setPen(pen);
        }
        charts.push_back(c.chart);
    }
    layoutChartGrid(this, charts, 2, 120);
    const QStringList tips = {tr("Share of requests (%) whose last token came within x ms of their arrival"),
                              tr("Share of requests (%) admitted into the batch within x ms of their arrival")};
    const QList<QChartView*> views = findChildren<QChartView*>();
    for (int i = 0; i < views.size() && i < tips.size(); ++i) views[i]->setToolTip(tips[i]);
}

void LabLatencyCharts::refresh(const std::vector<const LabRunData*>& runs) {
    std::vector<QList<QPointF>> e2e(kPolicies), queue(kPolicies);
    for (size_t k = 0; k < runs.size() && k < size_t(kPolicies); ++k) {
        if (!runs[k]) continue;
        e2e[k] = LabCharts::cdf(runs[k]->e2eMs());
        std::vector<double> waits;
        for (const auto& [id, t] : runs[k]->timings())
            if (t.queue_ms >= 0) waits.push_back(t.queue_ms);
        queue[k] = LabCharts::cdf(std::move(waits));
    }
    charts_[0].setPoints(e2e);
    charts_[1].setPoints(queue);
}

}  // namespace lorascope::ui
