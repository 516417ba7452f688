#include "inspector/batch_timeline_widget.h"

#include <QPainter>
#include <algorithm>

#include "common/tooltip_event.h"
#include "inspector/step_stats_model.h"

namespace lorascope::ui {

BatchTimelineWidget::BatchTimelineWidget(StepStatsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
    setAccessibleName(tr("Batch timeline: steps across, batch rows down"));
    setMouseTracking(true);
    connect(model_, &StepStatsModel::samplesAppended, this, qOverload<>(&QWidget::update));
    connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
}

void BatchTimelineWidget::setColourBy(ColourBy mode) {
    colour_by_ = mode;
    update();
}

QColor BatchTimelineWidget::colourFor(Ticket ticket) {
    // Golden-ratio hue steps keep neighbouring requests apart.
    const double hue = std::fmod(double(ticket) * 0.618033988749895, 1.0);
    return QColor::fromHsvF(float(hue), 0.55f, 0.92f);
}

QColor BatchTimelineWidget::colourFor(const QString& adapter) {
    if (adapter.isEmpty()) return QColor(0x9a, 0xa7, 0xb8);   // the base model: neutral
    return colourFor(Ticket(qHash(adapter)));
}

BatchTimelineWidget::Geometry BatchTimelineWidget::geometry() const {
    Geometry g;
    const auto& samples = model_->samples();
    const int usable_w = qMax(1, width() - g.left - 4);
    // Few steps get wider cells (up to 24 px) so a short run is still readable.
    if (!samples.empty()) g.cell_w = qBound(8, usable_w / int(samples.size()), 24);
    g.steps = qMin(int(samples.size()), usable_w / g.cell_w);
    g.first_sample = int(samples.size()) - g.steps;
    int rows = 1;
    for (int i = g.first_sample; i < int(samples.size()); ++i) rows = qMax(rows, int(samples[size_t(i)].row_tickets.size()));
    g.rows = rows;
    const int usable_h = height() - g.top - g.pad_strip - 18;
    g.cell_h = qBound(3, usable_h / rows, 18);
    return g;
}

void BatchTimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const auto& samples = model_->samples();
    const Geometry g = geometry();
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, 2, width() - 8, g.top - 4), Qt::AlignLeft | Qt::AlignVCenter,
               tr("rows ↓  steps →   ▨ prefill (joins)   ▌dark edge: leaves   ▁ bar: the row's KV-cache blocks   grey strip: padding share"));
    if (samples.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("No engine steps yet"));
        return;
    }
    // Row labels.
    p.setPen(palette().color(QPalette::PlaceholderText));
    const int label_every = qMax(1, 14 / g.cell_h);
    for (int r = 0; r < g.rows; r += label_every)
        p.drawText(QRect(0, g.top + r * g.cell_h, g.left - 4, g.cell_h), Qt::AlignRight | Qt::AlignVCenter, QString::number(r));
    const QColor leave_edge(40, 40, 40);
    // Cache occupancy per row: a bar along the cell's bottom, full width at the most blocks any
    // row in view references.
    int64_t most_blocks = 1;
    for (int s = 0; s < g.steps; ++s)
        for (int64_t b : samples[size_t(g.first_sample + s)].stats.row_kv_blocks) most_blocks = qMax(most_blocks, b);
    const QColor kv_bar(30, 60, 110);
    for (int s = 0; s < g.steps; ++s) {
        const StepSample& step = samples[size_t(g.first_sample + s)];
        const StepSample* next = g.first_sample + s + 1 < int(samples.size()) ? &samples[size_t(g.first_sample + s + 1)] : nullptr;
        const int x = g.left + s * g.cell_w;
        for (size_t r = 0; r < step.row_tickets.size(); ++r) {
            const Ticket t = step.row_tickets[r];
            const QRect cell(x, g.top + int(r) * g.cell_h, g.cell_w - 1, g.cell_h - 1);
            const QColor colour = colour_by_ == ColourBy::Request ? colourFor(t)
                                                                  : colourFor(r < step.row_adapters.size() ? step.row_adapters[r] : QString());
            p.fillRect(cell, colour);
            const bool prefill = r < step.stats.row_prefill.size() && step.stats.row_prefill[r];
            if (prefill) p.fillRect(cell, QBrush(colour.darker(170), Qt::BDiagPattern));
            const bool leaves = next && std::find(next->row_tickets.begin(), next->row_tickets.end(), t) == next->row_tickets.end();
            if (leaves) p.fillRect(QRect(cell.right() - 1, cell.top(), 2, cell.height()), leave_edge);
            if (r < step.stats.row_kv_blocks.size() && g.cell_h >= 5) {
                const int w = int(double(cell.width()) * double(step.stats.row_kv_blocks[r]) / double(most_blocks) + 0.5);
                p.fillRect(QRect(cell.left(), cell.bottom() - 1, qMax(1, w), 2), kv_bar);
            }
        }
        // Padding share of the positions this step computed.
        const double share = StepStatsModel::paddingShare(step.stats);
        const int strip_top = g.top + g.rows * g.cell_h + 3;
        p.fillRect(QRect(x, strip_top, g.cell_w - 1, g.pad_strip), QColor(230, 230, 230));
        const int h = int(share * g.pad_strip + 0.5);
        if (h > 0) p.fillRect(QRect(x, strip_top + g.pad_strip - h, g.cell_w - 1, h), QColor(120, 120, 120));
    }
    const int axis_y = g.top + g.rows * g.cell_h + g.pad_strip + 4;
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QRect(g.left, axis_y, width() - g.left - 4, 14), Qt::AlignLeft | Qt::AlignVCenter,
               tr("step %1").arg(samples[size_t(g.first_sample)].stats.step));
    p.drawText(QRect(g.left, axis_y, g.steps * g.cell_w, 14), Qt::AlignRight | Qt::AlignVCenter,
               tr("step %1").arg(samples.back().stats.step));
}

QString BatchTimelineWidget::describeAt(const QPoint& pos) const {
    const Geometry g = geometry();
    const int s = (pos.x() - g.left) / g.cell_w, r = (pos.y() - g.top) / g.cell_h;
    if (pos.x() < g.left || pos.y() < g.top || s >= g.steps || r >= g.rows) return {};
    const StepSample& step = model_->samples()[size_t(g.first_sample + s)];
    QString text = tr("step %1: %2 rows, %3 padded, %4 ms").arg(step.stats.step).arg(step.stats.rows).arg(step.stats.padded_tokens).arg(step.stats.wall_ms, 0, 'f', 1);
    if (size_t(r) < step.row_tickets.size()) {
        const QString adapter = size_t(r) < step.row_adapters.size() ? step.row_adapters[size_t(r)] : QString();
        const bool prefill = size_t(r) < step.stats.row_prefill.size() && step.stats.row_prefill[size_t(r)];
        text += tr("\nrow %1: request %2 (%3)%4").arg(r).arg(step.row_tickets[size_t(r)])
                    .arg(adapter.isEmpty() ? tr("base") : adapter).arg(prefill ? tr(", prefill: joined this step") : QString());
        if (size_t(r) < step.stats.row_kv_blocks.size())
            text += tr("\nKV cache: %1 blocks of %2 positions").arg(step.stats.row_kv_blocks[size_t(r)]).arg(step.stats.kv_block_size);
    } else {
        text += tr("\nrow %1: empty").arg(r);
    }
    return text;
}

bool BatchTimelineWidget::event(QEvent* e) {
    if (showToolTipFor(this, e, [this](const QPoint& p) { return describeAt(p); })) return true;
    return QWidget::event(e);
}

}  // namespace lorascope::ui
