#include "compare/token_stream_view.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

#include "common/theme.h"
#include "requests/alternatives_popup.h"

namespace lorascope::ui {

namespace {
constexpr int kPad = 4;
QString shown(const StreamedToken& t) {
    QString s = t.text;
    s.replace(QLatin1Char('\n'), QChar(0x21B5));
    return s.isEmpty() ? QStringLiteral("∅") : s;
}
}  // namespace

TokenStreamView::TokenStreamView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    setAccessibleName(tr("Generated tokens"));
}

void TokenStreamView::setTokens(const std::vector<StreamedToken>& tokens, const std::vector<StreamedToken>* reference,
                                size_t offset) {
    tokens_ = tokens;
    differs_.assign(tokens_.size(), false);
    differing_ = 0;
    if (reference) {
        for (size_t i = 0; i < tokens_.size(); ++i) {
            // Past the reference's end a token counts as different only once the reference stopped.
            const size_t at = offset + i;
            const bool differs = at < reference->size() ? (*reference)[at].token_id != tokens_[i].token_id : false;
            differs_[i] = differs;
            differing_ += differs ? 1 : 0;
        }
    }
    layoutTokens(width(), &rects_);
    updateGeometry();
    update();
}

int TokenStreamView::layoutTokens(int width, std::vector<QRect>* rects) const {
    const QFontMetrics fm(font());
    const int line_h = fm.height() + 2;
    int x = kPad, y = kPad;
    const int right = qMax(width - kPad, 40);
    if (rects) rects->clear();
    for (const auto& t : tokens_) {
        const int w = fm.horizontalAdvance(shown(t)) + 2;
        if (x + w > right && x > kPad) { x = kPad; y += line_h; }
        if (rects) rects->push_back(QRect(x, y, w, line_h - 1));
        x += w;
    }
    return y + line_h + kPad;
}

int TokenStreamView::heightForWidth(int width) const { return layoutTokens(width, nullptr); }
QSize TokenStreamView::sizeHint() const { return QSize(240, heightForWidth(qMax(width(), 240))); }

void TokenStreamView::resizeEvent(QResizeEvent*) {
    layoutTokens(width(), &rects_);
    const int h = heightForWidth(width());
    if (minimumHeight() != h) setMinimumHeight(h);
}

void TokenStreamView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QColor differ = differHighlight(palette());   // the palette's text stays readable on it (4.5:1)
    QColor alternate = palette().color(QPalette::Text);
    alternate.setAlpha(14);
    for (size_t i = 0; i < tokens_.size() && i < rects_.size(); ++i) {
        const QRect r = rects_[i];
        if (shading_) {
            if (!tokens_[i].special) p.fillRect(r, surpriseShade(palette(), tokens_[i].logprob));
        } else if (differs_[i]) p.fillRect(r, differ);
        else if (i % 2) p.fillRect(r, alternate);   // token boundaries stay visible
        p.setPen(tokens_[i].special ? palette().color(QPalette::PlaceholderText) : palette().color(QPalette::Text));
        p.drawText(r.adjusted(1, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, shown(tokens_[i]));
    }
    if (tokens_.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(kPad, kPad, 0, 0), Qt::AlignLeft | Qt::AlignTop, tr("waiting for tokens…"));
    }
}

QColor TokenStreamView::surpriseShade(const QPalette& palette, float logprob) {
    // Between the base and the differ highlight, both of which the palette's text reads on.
    const double t = std::clamp(double(logprob) / double(kSurpriseFloor), 0.0, 1.0);
    const QColor a = palette.color(QPalette::Base), b = differHighlight(palette);
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

int TokenStreamView::tokenAt(const QPoint& pos) const {
    for (size_t i = 0; i < rects_.size(); ++i)
        if (rects_[i].contains(pos)) return int(i);
    return -1;
}

QString TokenStreamView::tooltipFor(int i) const {
    if (i < 0 || size_t(i) >= tokens_.size()) return {};
    const StreamedToken& t = tokens_[size_t(i)];
    return tr("token %1: \"%2\" (id %3)\nlogprob %4 (p = %5)%6")
        .arg(i + 1)
        .arg(t.text.toHtmlEscaped())
        .arg(t.token_id)
        .arg(double(t.logprob), 0, 'f', 4)
        .arg(std::exp(double(t.logprob)), 0, 'f', 4)
        .arg(differs_[size_t(i)] ? tr("\ndiffers from the reference column") : QString());
}

bool TokenStreamView::showAlternatives(int i) {
    if (i < 0 || size_t(i) >= tokens_.size() || size_t(i) >= rects_.size() || tokens_[size_t(i)].alternatives.empty())
        return false;
    if (!popup_) {
        popup_ = new AlternativesPopup(this);
        connect(popup_, &AlternativesPopup::alternativeChosen, this, &TokenStreamView::alternativeChosen);
    }
    const QRect r = rects_[size_t(i)];
    popup_->showToken(tokens_[size_t(i)], i, QRect(mapToGlobal(r.topLeft()), r.size()));
    return true;
}

bool TokenStreamView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const int i = tokenAt(help->pos());
        if (showAlternatives(i)) {
            QToolTip::hideText();
        } else {
            if (popup_) popup_->hide();
            if (i >= 0) QToolTip::showText(help->globalPos(), tooltipFor(i), this, rects_[size_t(i)]);
            else QToolTip::hideText();
        }
        return true;
    }
    return QWidget::event(e);
}

void TokenStreamView::leaveEvent(QEvent* e) {
    if (popup_) popup_->hideSoon();
    QWidget::leaveEvent(e);
}

}  // namespace lorascope::ui
