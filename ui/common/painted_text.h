// Texts a widget paints itself (the timelines' legends, row labels and step labels), with the
// rectangle each is drawn in: painting and the layout checks (every text whole, none over
// another: tests/common/text_fit.h) read the same list, so what is checked is what is drawn.
#pragma once

#include <QFont>
#include <QFontMetrics>
#include <QPalette>
#include <QPainter>
#include <QRect>
#include <QString>
#include <QStringList>
#include <vector>

namespace lorascope::ui {

struct PaintedText {
    QString text;
    QRect rect;
    QFont font;
    int flags = Qt::AlignLeft | Qt::AlignVCenter;
    QPalette::ColorRole role = QPalette::Text;
};

class PaintedTextSource {
public:
    virtual ~PaintedTextSource() = default;
    // What the widget paints now, in widget coordinates.
    virtual std::vector<PaintedText> paintedTexts() const = 0;
};

// The width `text` takes when painted in one line (its bounding rectangle, which may overhang
// its advance by a pixel or two: what a painted text's rectangle must hold).
int paintedWidth(const QFontMetrics& fm, const QString& text);

// Lays `parts` out left to right from (x, y) within `width`, `gap` pixels apart, starting a new
// line where the next part would not fit (a part wider than `width` gets a line of its own and
// wraps at its words). Returns the texts; `*bottom` is the y below the last line.
std::vector<PaintedText> flowTexts(const QStringList& parts, const QFont& font, int x, int y, int width, int gap,
                                   int* bottom);

// Labels for rows `row_height` pixels tall from `top`, right-aligned in [0, right): every k-th row
// with k the fewest rows a line of `font` fits in, so that labels never overlap (at 16-32 rows they
// did).
std::vector<PaintedText> rowLabels(int rows, int top, double row_height, int right, const QFont& font);

// Draws each text in its rectangle with its font and palette role.
inline void drawPaintedTexts(QPainter& p, const QPalette& palette, const std::vector<PaintedText>& texts) {
    p.save();
    for (const PaintedText& t : texts) {
        p.setFont(t.font);
        p.setPen(palette.color(t.role));
        p.drawText(t.rect, t.flags, t.text);
    }
    p.restore();
}

}  // namespace lorascope::ui
