#include "inspector/batch_timeline_widget.h"

#include <QPainter>
#include <algorithm>

#include "common/theme.h"
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

std::vector<PaintedText> BatchTimelineWidget::legend(int* bottom) const {
    return flowTexts({tr("rows ↓  steps →"), tr("▨ prefill (joins)"), tr("▌dark edge: leaves"),
                      tr("▁ bar: the row's KV-cache blocks"), tr("grey strip: padding share")},
                     font(), 4, 2, width() - 8, 14, bottom);
}

BatchTimelineWidget::Geometry BatchTimelineWidget::geometry() const {
    Geometry g;
    int legend_bottom = 0;
    legend(&legend_bottom);
    g.top = legend_bottom + 4;
    const auto& samples = model_->samples();
    const int usable_w = qMax(1, width() - g.left - 4);
    // Few steps get wider cells (up to 24 px) so a short run is still readable.
    if (!samples.empty()) g.cell_w = qBound(8, usable_w / int(samples.size()), 24);
    g.steps = qMin(int(samples.size()), usable_w / g.cell_w);
    g.first_sample = int(samples.size()) - g.steps;
    int rows = 1;
    for (int i = g.first_sample; i < int(samples.size()); ++i) rows = qMax(rows, int(samples[size_t(i)].row_tickets.size()));
    g.rows = rows;
    const int axis_h = fontMetrics().height() + 2;
    const int usable_h = height() - g.top - g.pad_strip - 4 - axis_h;
    g.cell_h = qBound(3, usable_h / rows, 18);
    g.axis_y = g.top + g.rows * g.cell_h + g.pad_strip + 4;
    return g;
}

std::vector<PaintedText> BatchTimelineWidget::paintedTexts() const {
    std::vector<PaintedText> texts = legend(nullptr);
    const Geometry g = geometry();
    const auto& samples = model_->samples();
    if (samples.empty()) {
        texts.push_back({tr("No engine steps yet"), QRect(0, g.top, width(), qMax(1, height() - g.top)), font(),
                         Qt::AlignCenter | Qt::TextWordWrap, QPalette::PlaceholderText});
        return texts;
    }
    for (PaintedText& t : rowLabels(g.rows, g.top, g.cell_h, g.left - 4, font())) texts.push_back(std::move(t));
    // The first step's number at the left, the last one's at the right end of the cells; one
    // label for the range where both would not fit apart.
    const QFontMetrics fm(font());
    const int64_t first = samples[size_t(g.first_sample)].stats.step, last = samples.back().stats.step;
    const QString left = tr("step %1").arg(first), right = tr("step %1").arg(last);
    const int end = g.left + g.steps * g.cell_w;
    const int h = fm.height(), left_w = paintedWidth(fm, left), right_w = paintedWidth(fm, right);
    if (first != last && g.left + left_w + 12 + right_w <= end) {
        texts.push_back({left, QRect(g.left, g.axis_y, left_w, h), font(), Qt::AlignLeft | Qt::AlignVCenter, QPalette::PlaceholderText});
        texts.push_back({right, QRect(end - right_w, g.axis_y, right_w, h), font(), Qt::AlignRight | Qt::AlignVCenter,
                         QPalette::PlaceholderText});
    } else {
        const QString range = first == last ? left : tr("steps %1–%2").arg(first).arg(last);
        texts.push_back({range, QRect(g.left, g.axis_y, paintedWidth(fm, range), h), font(), Qt::AlignLeft | Qt::AlignVCenter,
                         QPalette::PlaceholderText});
    }
    return texts;
}

void BatchTimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const auto& samples = model_->samples();
    const Geometry g = geometry();
    drawPaintedTexts(p, palette(), paintedTexts());
    if (samples.empty()) return;
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
        p.fillRect(QRect(x, strip_top, g.cell_w - 1, g.pad_strip), subdued(palette()));
        const int h = int(share * g.pad_strip + 0.5);
        if (h > 0) p.fillRect(QRect(x, strip_top + g.pad_strip - h, g.cell_w - 1, h), palette().color(QPalette::PlaceholderText));
    }
}

QRect BatchTimelineWidget::cellRect(int step, int row) const {
    const Geometry g = geometry();
    return QRect(g.left + step * g.cell_w, g.top + row * g.cell_h, g.cell_w - 1, g.cell_h - 1);
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
