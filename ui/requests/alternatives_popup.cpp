#include "requests/alternatives_popup.h"

#include <QCursor>
#include <QMouseEvent>
#include <QPainter>
#include <cmath>

namespace lorascope::ui {

namespace {
constexpr int kPad = 6;
constexpr int kBarWidth = 110;
// Spaces and newlines made visible: " the" and "the" are different tokens.
QString visible(const std::string& text) {
    QString s = QString::fromStdString(text);
    s.replace(QLatin1Char('\n'), QChar(0x21B5));
    s.replace(QLatin1Char(' '), QChar(0x00B7));
    return s.isEmpty() ? QStringLiteral("\u2205") : s;
}
QString numbers(float logprob) {
    return QStringLiteral("p %1  %2").arg(std::exp(double(logprob)), 0, 'f', 3).arg(double(logprob), 0, 'f', 3);
}
}  // namespace

AlternativesPopup::AlternativesPopup(QWidget* owner) : QWidget(owner, Qt::ToolTip | Qt::FramelessWindowHint) {
    setMouseTracking(true);
    setAccessibleName(tr("Alternatives of the token"));
    setAttribute(Qt::WA_ShowWithoutActivating);
    hide_timer_.setSingleShot(true);
    hide_timer_.setInterval(400);   // time to move the mouse from the token onto the list
    connect(&hide_timer_, &QTimer::timeout, this, [this] {
        if (!geometry().contains(QCursor::pos())) hide();
    });
}

int AlternativesPopup::rowHeight() const { return fontMetrics().height() + 4; }
int AlternativesPopup::headerHeight() const { return 2 * fontMetrics().height() + 6; }

void AlternativesPopup::showToken(const StreamedToken& token, int position, const QRect& anchor) {
    hide_timer_.stop();
    alternatives_ = token.alternatives;
    chosen_id_ = token.token_id;
    chosen_text_ = token.text.toStdString();
    position_ = position;
    hovered_ = -1;
    header_ = tr("Token %1: %2 (%3)").arg(position + 1).arg(visible(token.text.toStdString()), numbers(token.logprob));
    text_width_ = 0;
    for (const auto& a : alternatives_) text_width_ = qMax(text_width_, fontMetrics().horizontalAdvance(visible(a.text)));
    text_width_ = qMin(text_width_ + 8, 220);
    resize(sizeHint());
    move(anchor.bottomLeft() + QPoint(0, 2));
    show();
    raise();
    update();
}

void AlternativesPopup::hideSoon() {
    if (isVisible()) hide_timer_.start();
}

QSize AlternativesPopup::sizeHint() const {
    const QFontMetrics fm = fontMetrics();
    const int rows_w = text_width_ + kBarWidth + fm.horizontalAdvance(QStringLiteral("p 0.000  -00.000")) + 3 * kPad;
    const int header_w = qMax(fm.horizontalAdvance(header_), fm.horizontalAdvance(tr("Click an alternative to continue from it")));
    return {qMax(rows_w, header_w + 2 * kPad), headerHeight() + rowCount() * rowHeight() + 2 * kPad};
}

QRect AlternativesPopup::rowRect(int row) const {
    return {kPad, kPad + headerHeight() + row * rowHeight(), width() - 2 * kPad, rowHeight()};
}

int AlternativesPopup::rowAt(const QPoint& pos) const {
    for (int i = 0; i < rowCount(); ++i)
        if (rowRect(i).contains(pos)) return i;
    return -1;
}

// A fork forces the alternative's token id: one without (an OpenAI server's) cannot be forced.
bool AlternativesPopup::forkable(int row) const {
    return row >= 0 && row < rowCount() && !isChosenRow(row) && alternatives_[size_t(row)].token_id >= 0;
}

bool AlternativesPopup::isChosenRow(int row) const {
    if (row < 0 || row >= rowCount()) return false;
    const TokenAlternative& a = alternatives_[size_t(row)];
    return chosen_id_ >= 0 ? a.token_id == chosen_id_ : a.text == chosen_text_;
}

QString AlternativesPopup::rowText(int row) const {
    if (row < 0 || row >= rowCount()) return {};
    const TokenAlternative& a = alternatives_[size_t(row)];
    return QStringLiteral("%1  %2%3").arg(visible(a.text), numbers(a.logprob), isChosenRow(row) ? tr("  (chosen)") : QString());
}

void AlternativesPopup::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.toolTipBase());
    p.setPen(pal.color(QPalette::Mid));
    p.drawRect(rect().adjusted(0, 0, -1, -1));
    const QFontMetrics fm = fontMetrics();
    p.setPen(pal.color(QPalette::ToolTipText));
    p.drawText(QRect(kPad, kPad, width() - 2 * kPad, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, header_);
    QColor hint = pal.color(QPalette::ToolTipText);
    hint.setAlpha(160);
    p.setPen(hint);
    p.drawText(QRect(kPad, kPad + fm.height() + 2, width() - 2 * kPad, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               tr("Click an alternative to continue from it"));
    for (int i = 0; i < rowCount(); ++i) {
        const TokenAlternative& a = alternatives_[size_t(i)];
        const QRect r = rowRect(i);
        if (i == hovered_ && !isChosenRow(i)) p.fillRect(r, pal.color(QPalette::Highlight).lighter(170));
        QFont f = font();
        f.setBold(isChosenRow(i));
        p.setFont(f);
        p.setPen(pal.color(QPalette::ToolTipText));
        p.drawText(QRect(r.left() + 2, r.top(), text_width_, r.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(visible(a.text), Qt::ElideRight, text_width_ - 4));
        const int bar = int(std::lround(kBarWidth * std::exp(double(a.logprob))));
        const QRect track(r.left() + text_width_ + kPad, r.top() + 3, kBarWidth, r.height() - 6);
        p.fillRect(track, pal.color(QPalette::Midlight));
        p.fillRect(QRect(track.topLeft(), QSize(qMax(1, bar), track.height())), pal.color(QPalette::Highlight));
        p.drawText(QRect(track.right() + kPad, r.top(), r.right() - track.right() - kPad, r.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, numbers(a.logprob));
    }
}

void AlternativesPopup::mouseMoveEvent(QMouseEvent* e) {
    hide_timer_.stop();
    const int row = rowAt(e->position().toPoint());
    if (row != hovered_) {
        hovered_ = row;
        setCursor(forkable(row) ? Qt::PointingHandCursor : Qt::ArrowCursor);
        update();
    }
}

void AlternativesPopup::mouseReleaseEvent(QMouseEvent* e) {
    const int row = rowAt(e->position().toPoint());
    if (e->button() != Qt::LeftButton || !forkable(row)) return;
    const TokenAlternative choice = alternatives_[size_t(row)];
    hide();
    Q_EMIT alternativeChosen(position_, choice);
}

void AlternativesPopup::leaveEvent(QEvent*) { hideSoon(); }

}  // namespace lorascope::ui
