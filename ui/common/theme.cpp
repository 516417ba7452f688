#include "common/theme.h"

#include <QAbstractAxis>
#include <QChart>
#include <QGuiApplication>
#include <QLegend>
#include <QStyleHints>
#include <cmath>

namespace lorascope::ui {

namespace {
double linear(double channel) {
    return channel <= 0.04045 ? channel / 12.92 : std::pow((channel + 0.055) / 1.055, 2.4);
}
}  // namespace

double relativeLuminance(const QColor& c) {
    const QColor rgb = c.toRgb();
    return 0.2126 * linear(rgb.redF()) + 0.7152 * linear(rgb.greenF()) + 0.0722 * linear(rgb.blueF());
}

double contrastRatio(const QColor& a, const QColor& b) {
    const double la = relativeLuminance(a), lb = relativeLuminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

bool isDark(const QPalette& palette) {
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
    // The platform's own word, when the palette is the application's.
    if (palette == QGuiApplication::palette()) {
        const Qt::ColorScheme scheme = QGuiApplication::styleHints()->colorScheme();
        if (scheme != Qt::ColorScheme::Unknown) return scheme == Qt::ColorScheme::Dark;
    }
#endif
    return relativeLuminance(palette.color(QPalette::Window)) < relativeLuminance(palette.color(QPalette::WindowText));
}

QColor withContrast(const QColor& colour, const QColor& against, double ratio) {
    const QColor hsl = colour.toHsl();
    const bool go_lighter = relativeLuminance(against) < 0.18;   // a dark background: lighter text, and the reverse
    float h, s, l, a;
    hsl.getHslF(&h, &s, &l, &a);
    QColor best = colour;
    for (int step = 0; step <= 100 && contrastRatio(best, against) < ratio; ++step) {
        l = go_lighter ? std::min(1.0f, l + 0.01f) : std::max(0.0f, l - 0.01f);
        best = QColor::fromHslF(h, s, l, a);
    }
    return best.toRgb();
}

QColor differHighlight(const QPalette& palette) {
    // A background under the palette's text: light orange under dark text, dark orange under light text.
    const QColor text = palette.color(QPalette::Text);
    const QColor orange = relativeLuminance(text) < 0.18 ? QColor(0xff, 0xd2, 0x78) : QColor(0x8a, 0x50, 0x00);
    return withContrast(orange, text);
}

QColor errorText(const QPalette& palette) { return withContrast(QColor(0xc0, 0x20, 0x20), palette.color(QPalette::Base)); }
QColor runningText(const QPalette& palette) { return withContrast(QColor(0x1a, 0x6f, 0xb5), palette.color(QPalette::Base)); }
QColor warningText(const QPalette& palette) { return withContrast(QColor(0xa0, 0x60, 0x00), palette.color(QPalette::Base)); }

QColor subdued(const QPalette& palette) {
    const QColor base = palette.color(QPalette::Base), text = palette.color(QPalette::Text);
    return QColor::fromRgbF(0.85f * base.redF() + 0.15f * text.redF(), 0.85f * base.greenF() + 0.15f * text.greenF(),
                            0.85f * base.blueF() + 0.15f * text.blueF());
}

void applyPalette(QChart* chart, const QPalette& palette) {
    const QColor text = palette.color(QPalette::Text);
    chart->setBackgroundBrush(palette.brush(QPalette::Base));
    chart->setBackgroundPen(QPen(subdued(palette)));
    chart->setTitleBrush(text);
    chart->legend()->setLabelColor(text);
    for (QAbstractAxis* axis : chart->axes()) {
        axis->setLabelsColor(text);
        axis->setTitleBrush(text);
        axis->setLinePenColor(palette.color(QPalette::Mid));
        axis->setGridLineColor(subdued(palette));
    }
}

}  // namespace lorascope::ui
