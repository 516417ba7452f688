#include "common/painted_text.h"

#include <QFontMetrics>
#include <algorithm>
#include <cmath>

namespace lorascope::ui {

int paintedWidth(const QFontMetrics& fm, const QString& text) {
    return std::max(fm.horizontalAdvance(text), fm.boundingRect(QRect(0, 0, 1 << 20, fm.height()), Qt::AlignLeft, text).width());
}

std::vector<PaintedText> flowTexts(const QStringList& parts, const QFont& font, int x, int y, int width, int gap,
                                   int* bottom) {
    const QFontMetrics fm(font);
    std::vector<PaintedText> out;
    int cx = x, line_top = y, line_h = fm.height();
    for (const QString& part : parts) {
        const int w = paintedWidth(fm, part);
        if (cx > x && cx + w > x + width) {   // the next line
            cx = x;
            line_top += line_h;
            line_h = fm.height();
        }
        if (w > width) {   // too wide for any line: wrapped at its words on lines of its own
            const QRect r = fm.boundingRect(QRect(x, line_top, width, 10000), Qt::TextWordWrap, part);
            out.push_back({part, QRect(x, line_top, width, r.height()), font, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap});
            line_top += r.height();
            cx = x;
            continue;
        }
        out.push_back({part, QRect(cx, line_top, w, fm.height()), font, Qt::AlignLeft | Qt::AlignVCenter});
        cx += w + gap;
    }
    if (bottom) *bottom = line_top + (cx > x ? line_h : 0);
    return out;
}

std::vector<PaintedText> rowLabels(int rows, int top, double row_height, int right, const QFont& font) {
    // A line as laid out (QFontMetrics::height() rounds 12.6 px down to 12, the text takes 13).
    const int line = int(std::ceil(QFontMetricsF(font).height()));
    std::vector<PaintedText> out;
    if (rows <= 0 || row_height <= 0) return out;
    int every = std::max(1, int(std::ceil(double(line) / row_height)));
    // Whole pixels apart: the labels' tops are truncated, and 3 rows of 4.2 px put "3" 12 px below
    // "0" in a 13 px line.
    while (row_height < line && int(every * row_height) < line) ++every;
    const int bottom = top + int(rows * row_height);
    for (int r = 0; r < rows; r += every) {
        // A row at least a line tall gets its label centred in it; thinner rows get it from their
        // top, `every` rows (a line or more) apart, and none that would run past the last row.
        const int y = top + int(r * row_height);
        const int h = row_height >= line ? int(row_height) : line;
        if (y + h > bottom) break;
        out.push_back({QString::number(r), QRect(0, y, right, h), font, Qt::AlignRight | Qt::AlignVCenter, QPalette::PlaceholderText});
    }
    return out;
}

}  // namespace lorascope::ui
