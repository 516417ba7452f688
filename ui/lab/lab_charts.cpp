#include "lab/lab_charts.h"

#include "common/compact_chart.h"

#include <QChart>
#include <QChartView>
#include <QLegend>
#include <QLineSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "lab/lab_run_data.h"

namespace lorascope::ui {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

QList<QPointF> sampled(const QList<QPointF>& points) {
    if (points.size() <= LabCharts::kMaxPoints) return points;
    QList<QPointF> out;
    const double stride = double(points.size()) / LabCharts::kMaxPoints;
    for (int i = 0; i < LabCharts::kMaxPoints; ++i) out.append(points[int(i * stride)]);
    out.append(points.back());
    return out;
}

template <typename Value>
QList<QPointF> perStep(const LabRunData& run, Value value) {
    QList<QPointF> out;
    const auto& steps = run.steps();
    out.reserve(int(steps.size()));
    for (size_t i = 0; i < steps.size(); ++i) out.append({double(i), value(steps[i])});
    return out;
}
}  // namespace

QList<QPointF> LabCharts::cdf(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    QList<QPointF> out;
    for (size_t i = 0; i < values.size(); ++i) out.append({values[i], 100.0 * double(i + 1) / double(values.size())});
    return out;
}

QColor LabCharts::policyColour(int policy) {
    static const QColor colours[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xe6, 0x6a, 0x00), QColor(0x2c, 0xa0, 0x2c), QColor(0x94, 0x67, 0xbd)};
    return colours[policy % 4];
}

LabCharts::LabCharts(QWidget* parent) : QWidget(parent) {
    charts_.push_back(makeChart(tr("Batch rows"), tr("step"), tr("rows"), true, true));
    charts_.push_back(makeChart(tr("Queue depth"), tr("step"), tr("requests"), true, true));
    charts_.push_back(makeChart(tr("KV cache allocated"), tr("step"), tr("MiB"), true, false));
    charts_.push_back(makeChart(tr("Step time"), tr("step"), tr("ms"), true, false));
    // The CDFs' y axes say "%" only: "% of requests" did not fit a chart's height beside every dock.
    charts_.push_back(makeChart(tr("Time to first token, CDF"), tr("ms"), tr("%"), false, false));
    charts_.push_back(makeChart(tr("Per-token latency, CDF"), tr("ms"), tr("%"), false, false));
    charts_.push_back(makeChart(tr("KV per request (peak)"), tr("request"), tr("MiB"), true, false));
    charts_.push_back(makeChart(tr("Decoded tokens, total"), tr("step"), tr("tokens"), true, true));
    std::vector<QChart*> charts;
    for (const auto& c : charts_) charts.push_back(c.chart);
    layoutChartGrid(this, charts, 4, 120);
    // What each small chart plots, in words (its axis titles are kept short to fit).
    const QStringList tips = {tr("Batch rows at each engine step"), tr("Requests waiting in the queue at each step"),
                              tr("KV cache allocated at each step, MiB"), tr("Wall time of each step, ms"),
                              tr("Share of requests (%) whose first token came within x ms"),
                              tr("Share of tokens (%) that came within x ms of the one before"),
                              tr("The most KV cache each request held, MiB"), tr("Tokens decoded so far, at each step")};
    const QList<QChartView*> views = findChildren<QChartView*>();
    for (int i = 0; i < views.size() && i < tips.size(); ++i) views[i]->setToolTip(tips[i]);
}

LabCharts::Chart LabCharts::makeChart(const QString& title, const QString& x_title, const QString& y_title, bool integer_x,
                                      bool integer_y) {
    Chart c;
    c.chart = new QChart;
    c.chart->setTitle(title);
    c.chart->legend()->hide();   // the lab shows one key above all the charts
    c.x = new QValueAxis(c.chart);
    c.y = new QValueAxis(c.chart);
    styleCompactChart(c.chart, c.x, c.y);
    c.integer_x = integer_x;
    c.integer_y = integer_y;
    for (QValueAxis* a : {c.x, c.y}) a->setTitleFont(c.x->labelsFont());   // axis titles as small as the labels
    c.x->setTitleText(x_title);
    c.y->setTitleText(y_title);
    c.chart->addAxis(c.x, Qt::AlignBottom);
    c.chart->addAxis(c.y, Qt::AlignLeft);
    setNiceAxisRange(c.x, 0, 1, integer_x);
    setNiceAxisRange(c.y, 0, 1, integer_y);
    return c;
}

void LabCharts::setSeries(Chart& c, size_t policy, const QString& name, const QList<QPointF>& points) {
    while (c.series.size() <= policy) {
        auto* s = new QLineSeries(c.chart);
        QPen pen(policyColour(int(c.series.size())));
        pen.setWidthF(1.6);
        s->setPen(pen);
        c.chart->addSeries(s);
        s->attachAxis(c.x);
        s->attachAxis(c.y);
        c.series.push_back(s);
    }
    c.series[policy]->setName(name);
    c.series[policy]->replace(sampled(points));
}

void LabCharts::refresh(const std::vector<const LabRunData*>& runs, const QStringList& names) {
    for (int i = 0; i < chartCount(); ++i) refreshChart(i, runs, names);
}

QList<QPointF> LabCharts::points(int chart, const LabRunData& r) {
    switch (chart) {
        case 0: return perStep(r, [](const StepStats& s) { return double(s.rows); });
        case 1: return perStep(r, [](const StepStats& s) { return double(s.queue_depth); });
        case 2: return perStep(r, [](const StepStats& s) { return double(s.kv_bytes_allocated) / kMiB; });
        case 3: return perStep(r, [](const StepStats& s) { return s.wall_ms; });
        case 4: return cdf(r.ttftMs());
        case 5: return cdf(r.perTokenMs());
        case 6: {
            // A block's bytes from any step that had blocks in use.
            double block_bytes = 0;
            for (const StepStats& s : r.steps())
                if (s.kv_blocks_used > 0) {
                    block_bytes = double(s.kv_bytes_allocated) / double(s.kv_blocks_used);
                    break;
                }
            QList<QPointF> per_request;
            for (size_t i = 0; i < r.requests().size(); ++i)
                per_request.append({double(i), double(r.requests()[i].peak_kv_blocks) * block_bytes / kMiB});
            return per_request;
        }
        default: {
            QList<QPointF> generated;
            int64_t total = 0;
            for (size_t i = 0; i < r.steps().size(); ++i) {
                total += r.steps()[i].decode_tokens;
                generated.append({double(i), double(total)});
            }
            return generated;
        }
    }
}

void LabCharts::refreshChart(int chart, const std::vector<const LabRunData*>& runs, const QStringList& names) {
    Chart& c = charts_.at(size_t(chart));
    for (size_t k = 0; k < runs.size(); ++k) {
        const QString name = k < size_t(names.size()) ? names[int(k)] : QString::number(k);
        // Not run yet: no line at all (a policy still waiting drew zeros, as if it had run).
        const bool ran = runs[k] && !runs[k]->steps().empty();
        setSeries(c, k, name, ran ? points(chart, *runs[k]) : QList<QPointF>());
    }
    double lo_x = 0, hi_x = 1, hi_y = 0;
    bool any = false;
    for (QLineSeries* s : c.series)
        for (const QPointF& p : s->points()) {
            if (!any) lo_x = hi_x = p.x();
            any = true;
            lo_x = std::min(lo_x, p.x());
            hi_x = std::max(hi_x, p.x());
            hi_y = std::max(hi_y, p.y());
        }
    if (c.integer_x || !any) lo_x = std::min(lo_x, 0.0);
    setNiceAxisRange(c.x, lo_x, hi_x, c.integer_x);
    setNiceAxisRange(c.y, 0, hi_y > 0 ? hi_y : 1.0, c.integer_y);
}

}  // namespace lorascope::ui
