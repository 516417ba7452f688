#include "lab/lab_timeline_widget.h"

#include <QImage>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "common/tooltip_event.h"
#include "engine_link/step_reason.h"
#include "lab/lab_run_data.h"

namespace lorascope::ui {

namespace {
// The row-number gutter (kLeft) and the step-number strip (kAxisH) at least; both grow with the
// font (leftGutter, axisHeight): GNOME's 11 pt font pushed "queue" and the step numbers out.
constexpr int kLeft = 44, kRight = 6, kQueueH = 22, kGap = 3, kAxisH = 16;

QFont smallFont(const QFont& f) {
    QFont small = f;
    small.setPointSizeF(small.pointSizeF() * 0.8);
    return small;
}
constexpr double kWidestCellPx = 16;

QRgb requestColour(int index, bool prefill) {
    // Golden-ratio hue steps keep neighbouring requests apart; prefill cells are paler.
    const double hue = std::fmod(double(index) * 0.618033988749895, 1.0);
    return QColor::fromHsvF(float(hue), prefill ? 0.25f : 0.6f, prefill ? 1.0f : 0.9f).rgb();
}
}  // namespace

LabTimelineWidget::LabTimelineWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAccessibleName(tr("Lab timeline: steps across, batch rows down, queue depth above"));
}

void LabTimelineWidget::setRun(const LabRunData* run, const QString& title) {
    run_ = run;
    title_ = title;
    selected_ = -1;
    fit();
}

int LabTimelineWidget::stepCount() const { return run_ ? int(run_->steps().size()) : 0; }

std::vector<PaintedText> LabTimelineWidget::key(int* bottom) const {
    QFont bold = font();
    bold.setBold(true);
    const QStringList parts = {tr("rows ↓  steps →"), tr("pale: prefill (joins)"), tr("top strip: queue depth")};
    int title_bottom = 0;
    std::vector<PaintedText> texts = flowTexts({title_}, bold, 4, 1, width() - 8, 14, &title_bottom);
    // The key goes on the title's line when it fits there, else below.
    const int title_w = title_.isEmpty() ? 0 : paintedWidth(QFontMetrics(bold), title_) + 14;
    int key_bottom = 0;
    std::vector<PaintedText> rest = flowTexts(parts, font(), 4 + title_w, 1, width() - 8 - title_w, 14, &key_bottom);
    if (title_w > (width() - 8) / 2) rest = flowTexts(parts, font(), 4, title_bottom, width() - 8, 14, &key_bottom);
    texts.insert(texts.end(), rest.begin(), rest.end());
    if (bottom) *bottom = std::max(title_bottom, key_bottom) + 2;
    return texts;
}

int LabTimelineWidget::leftGutter() const {
    return qMax(kLeft, QFontMetrics(font()).horizontalAdvance(tr("queue")) + 8);
}

// The ticks (4 px) and the step numbers below the rows.
int LabTimelineWidget::axisHeight() const { return qMax(kAxisH, QFontMetrics(smallFont(font())).height() + 5); }

// A line of key, the queue strip, two rows' numbers and the step numbers, in the font in use. Not
// the key as it wraps at the width of the moment: before the layout that is a child's 100 px, and
// the key's six lines there raised the window's minimum height from 761 to 809 px under GNOME's font.
QSize LabTimelineWidget::minimumSizeHint() const {
    QFont bold = font();
    bold.setBold(true);
    const int key_line = QFontMetrics(bold).height() + 3;
    return {200, qMax(90, key_line + kQueueH + kGap + 2 * QFontMetrics(smallFont(font())).height() + axisHeight())};
}

QRect LabTimelineWidget::queueRect() const {
    int top = 0;
    key(&top);
    return {leftGutter(), top, qMax(1, width() - leftGutter() - kRight), kQueueH};
}

QRect LabTimelineWidget::rowsRect() const {
    const int top = queueRect().bottom() + 1 + kGap;
    return {leftGutter(), top, qMax(1, width() - leftGutter() - kRight), qMax(1, height() - top - axisHeight())};
}

void LabTimelineWidget::fit() {
    fitted_ = true;
    const int steps = qMax(1, stepCount());
    steps_per_px_ = qMax(1.0 / kWidestCellPx, double(steps) / double(rowsRect().width()));
    first_step_ = 0;
    update();
}

void LabTimelineWidget::setSelected(int request_index) {
    selected_ = request_index;
    update();
}

void LabTimelineWidget::runChanged() {
    if (fitted_) fit();
    else update();
}

void LabTimelineWidget::clampView() {
    const double visible = steps_per_px_ * rowsRect().width();
    first_step_ = qBound(0.0, first_step_, qMax(0.0, double(stepCount()) - visible * 0.5));
}

void LabTimelineWidget::zoom(double factor, int anchor_x) {
    const double at = first_step_ + (anchor_x - leftGutter()) * steps_per_px_;
    steps_per_px_ = qBound(1.0 / kWidestCellPx, steps_per_px_ / factor, qMax(1.0, double(stepCount())));
    first_step_ = at - (anchor_x - leftGutter()) * steps_per_px_;
    fitted_ = false;
    clampView();
    update();
}

void LabTimelineWidget::panSteps(double steps) {
    first_step_ += steps;
    fitted_ = false;
    clampView();
    update();
}

LabTimelineWidget::Hit LabTimelineWidget::hitAt(const QPoint& pos) const {
    Hit h;
    if (!run_ || pos.x() < leftGutter() || pos.x() >= leftGutter() + rowsRect().width()) return h;
    const int step = int(std::floor(first_step_ + (pos.x() - leftGutter()) * steps_per_px_));
    if (step < 0 || step >= stepCount()) return h;
    const QRect rows = rowsRect();
    if (queueRect().contains(pos)) {
        h.step = step;
        return h;
    }
    const int n = qMax(1, run_->rows());
    if (!rows.contains(pos)) return h;
    h.step = step;
    h.row = (pos.y() - rows.top()) * n / rows.height();
    h.request = run_->cellAt(step, h.row);
    return h;
}

QString LabTimelineWidget::describeAt(const QPoint& pos) const {
    const Hit h = hitAt(pos);
    if (h.step < 0) return {};
    const StepStats& s = run_->steps()[size_t(h.step)];
    const QString why = stepPrefillReason(s);
    const QString because = why.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(why);
    if (h.row < 0) return tr("step %1: %2 requests waiting in the queue%3").arg(s.step).arg(s.queue_depth).arg(because);
    if (h.request < 0) return tr("step %1, row %2: empty%3").arg(s.step).arg(h.row).arg(because);
    const LabRequest& r = run_->requests()[size_t(h.request)];
    QString text = tr("request %1 (engine id %2)\nadapter: %3\nprompt: %4 tokens, up to %5 new\nstate: %6\n"
                      "step %7, row %8%9\nrows held: steps %10-%11")
                       .arg(h.request).arg(r.id)
                       .arg(r.adapter.isEmpty() ? tr("base model") : r.adapter)
                       .arg(r.prompt_tokens).arg(r.max_new_tokens)
                       .arg(labStateName(r.state))
                       .arg(s.step).arg(h.row)
                       .arg(run_->joinedAt(h.step, h.row) ? tr(" (prefill: joining)") : QString())
                       .arg(r.first_step).arg(r.last_step);
    if (r.state == LabRequestState::Finished || r.state == LabRequestState::Cancelled || r.state == LabRequestState::Error)
        text += tr("\nqueued %1 ms · first token %2 ms · total %3 ms")
                    .arg(r.queue_ms, 0, 'f', 1).arg(r.ttft_ms, 0, 'f', 1).arg(r.total_ms, 0, 'f', 1);
    if (!r.error.isEmpty()) text += QLatin1Char('\n') + r.error;
    return text;
}

LabTimelineWidget::Span LabTimelineWidget::visibleSpan() const {
    Span span;
    if (stepCount() == 0) return span;
    // One image column per pixel when zoomed out, one per step when zoomed in.
    const QRect rows = rowsRect();
    const double visible = steps_per_px_ * rows.width();
    span.first = qMax(0, int(std::floor(first_step_)));
    span.last = qMin(stepCount(), int(std::ceil(first_step_ + visible)));
    if (span.last <= span.first) return Span{};
    span.columns = qMin(span.last - span.first, rows.width());
    span.x0 = leftGutter() + (span.first - first_step_) / steps_per_px_;
    span.width = (span.last - span.first) / steps_per_px_;
    return span;
}

int64_t LabTimelineWidget::maxQueue(const Span& span) const {
    int64_t max_queue = 1;   // over every step shown, also those between the sampled columns
    for (int step = span.first; step < span.last; ++step) max_queue = std::max(max_queue, run_->steps()[size_t(step)].queue_depth);
    return max_queue;
}

void LabTimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QRect rows = rowsRect(), queue = queueRect();
    p.fillRect(queue, palette().alternateBase());
    p.fillRect(rows, palette().alternateBase());
    const Span span = visibleSpan();
    if (span.columns > 0) {
        std::vector<int64_t> queue_at;
        const QImage cells = renderCells(span, &queue_at);
        drawCells(p, rows, span, cells);
        drawQueue(p, queue, span, queue_at, maxQueue(span));
        drawTicks(p, rows, span);
    }
    drawPaintedTexts(p, palette(), paintedTexts());
}

std::vector<PaintedText> LabTimelineWidget::paintedTexts() const {
    std::vector<PaintedText> texts = key(nullptr);
    const QRect rows = rowsRect(), queue = queueRect();
    texts.push_back({tr("queue"), QRect(0, queue.top(), leftGutter() - 4, queue.height()), font(), Qt::AlignRight | Qt::AlignVCenter});
    const Span span = visibleSpan();
    if (span.columns == 0) {
        texts.push_back({tr("No steps yet: define a workload and press Run"), rows, font(), Qt::AlignCenter | Qt::TextWordWrap,
                         QPalette::PlaceholderText});
        return texts;
    }
    const std::vector<PaintedText> axis = axisTexts(span);
    texts.insert(texts.end(), axis.begin(), axis.end());
    return texts;
}

QImage LabTimelineWidget::renderCells(const Span& span, std::vector<int64_t>* queue_at) const {
    const int n_rows = qMax(1, run_->rows());
    const double per_column = double(span.last - span.first) / double(span.columns);
    QImage image(span.columns, n_rows, QImage::Format_RGB32);
    image.fill(palette().alternateBase().color());
    queue_at->assign(size_t(span.columns), 0);
    for (int c = 0; c < span.columns; ++c) {
        const int step = span.first + int(c * per_column);
        for (int row = 0; row < n_rows; ++row) {
            const int index = run_->cellAt(step, row);
            if (index < 0) continue;
            QRgb colour = requestColour(index, run_->joinedAt(step, row));
            if (index == selected_) colour = qRgb(20, 20, 20);
            image.setPixel(c, row, colour);
        }
        (*queue_at)[size_t(c)] = run_->steps()[size_t(step)].queue_depth;
    }
    return image;
}

void LabTimelineWidget::drawCells(QPainter& p, const QRect& rows, const Span& span, const QImage& cells) const {
    const int n_rows = cells.height();
    p.save();
    p.setClipRect(rows);
    p.drawImage(QRectF(span.x0, rows.top(), span.width, rows.height()), cells);
    // Row separators once cells are tall enough to tell apart.
    if (rows.height() / n_rows >= 6) {
        p.setPen(palette().color(QPalette::Base));
        for (int r = 1; r < n_rows; ++r) {
            const int y = rows.top() + r * rows.height() / n_rows;
            p.drawLine(rows.left(), y, rows.right(), y);
        }
    }
    p.restore();
}

void LabTimelineWidget::drawQueue(QPainter& p, const QRect& queue, const Span& span, const std::vector<int64_t>& queue_at,
                                  int64_t max_queue) const {
    p.save();
    p.setClipRect(queue);
    const QColor queue_colour(0xd0, 0x80, 0x30);
    const double col_w = span.width / span.columns;
    for (int c = 0; c < span.columns; ++c) {
        const double h = double(queue.height() - 2) * double(queue_at[size_t(c)]) / double(max_queue);
        if (h > 0) p.fillRect(QRectF(span.x0 + c * col_w, queue.bottom() - h, qMax(1.0, col_w), h), queue_colour);
    }
    p.restore();
}

// Integer step ticks about every 80 px.
int LabTimelineWidget::tickEvery() const {
    const double raw = 80 * steps_per_px_;
    const double mag = std::pow(10.0, std::floor(std::log10(qMax(1.0, raw))));
    return int(qMax(1.0, raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag));
}

void LabTimelineWidget::drawTicks(QPainter& p, const QRect& rows, const Span& span) const {
    p.setPen(palette().color(QPalette::Text));
    const int tick = tickEvery();
    for (int s = (span.first / tick) * tick; s < span.last; s += tick) {
        const double x = leftGutter() + (s - first_step_) / steps_per_px_;
        if (x >= leftGutter() && x <= rows.right()) p.drawLine(QPointF(x, rows.bottom() + 1), QPointF(x, rows.bottom() + 4));
    }
}

// Row numbers left, step numbers below (none over another or over "step"), the queue's scale in its strip.
std::vector<PaintedText> LabTimelineWidget::axisTexts(const Span& span) const {
    const QRect rows = rowsRect(), queue = queueRect();
    const QFont small = smallFont(font());
    const QFontMetrics fm(small);
    const QString max_text = tr("max %1").arg(maxQueue(span));
    std::vector<PaintedText> texts = {{max_text, QRect(queue.left() + 2, queue.top(), paintedWidth(fm, max_text), fm.height()),
                                       small, Qt::AlignLeft | Qt::AlignTop}};
    const int n_rows = qMax(1, run_->rows());
    for (PaintedText& t : rowLabels(n_rows, rows.top(), double(rows.height()) / n_rows, leftGutter() - 4, small)) {
        t.role = QPalette::Text;
        texts.push_back(std::move(t));
    }
    const QString step_word = tr("step");
    const QRect step_rect(rows.right() + 1 - paintedWidth(fm, step_word), rows.bottom() + 4, paintedWidth(fm, step_word),
                          fm.height());
    QRect previous;
    const int tick = tickEvery();
    for (int s = (span.first / tick) * tick; s < span.last; s += tick) {
        const double x = leftGutter() + (s - first_step_) / steps_per_px_;
        if (x < leftGutter() || x > rows.right()) continue;
        const QString label = QString::number(s);
        const int w = paintedWidth(fm, label);
        const QRect r(qBound(0, int(x) - w / 2, width() - w), rows.bottom() + 4, w, fm.height());
        if (r.intersects(step_rect.adjusted(-4, 0, 0, 0)) || (previous.isValid() && r.left() < previous.right() + 6)) continue;
        texts.push_back({label, r, small, Qt::AlignCenter});
        previous = r;
    }
    texts.push_back({step_word, step_rect, small, Qt::AlignRight | Qt::AlignVCenter});
    return texts;
}

void LabTimelineWidget::wheelEvent(QWheelEvent* e) {
    const double notches = e->angleDelta().y() / 120.0;
    if (notches != 0) zoom(std::pow(1.25, notches), int(e->position().x()));
    e->accept();
}

void LabTimelineWidget::mousePressEvent(QMouseEvent* e) {
    press_pos_ = e->pos();
    press_first_ = first_step_;
    dragging_ = false;
    QWidget::mousePressEvent(e);
}

void LabTimelineWidget::mouseMoveEvent(QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton) {
        const int dx = e->pos().x() - press_pos_.x();
        if (std::abs(dx) > 3) dragging_ = true;
        if (dragging_) {
            first_step_ = press_first_ - dx * steps_per_px_;
            fitted_ = false;
            clampView();
            update();
        }
    }
    QWidget::mouseMoveEvent(e);
}

void LabTimelineWidget::mouseReleaseEvent(QMouseEvent* e) {
    if (!dragging_ && e->button() == Qt::LeftButton) {
        const Hit h = hitAt(e->pos());
        if (h.request >= 0) {
            selected_ = h.request;
            update();
            Q_EMIT requestClicked(h.request);
        }
    }
    dragging_ = false;
    QWidget::mouseReleaseEvent(e);
}

void LabTimelineWidget::mouseDoubleClickEvent(QMouseEvent*) { fit(); }

void LabTimelineWidget::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    if (fitted_) fit();
}

bool LabTimelineWidget::event(QEvent* e) {
    if (showToolTipFor(this, e, [this](const QPoint& p) { return describeAt(p); })) return true;
    return QWidget::event(e);
}

}  // namespace lorascope::ui
