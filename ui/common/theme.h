// Colours the window picks itself, derived from the palette so that they read in light and dark
// themes alike: the comparison's highlight, status and error texts, chart backgrounds and grids.
// Text on a picked background keeps WCAG AA contrast (4.5:1); a picked text colour keeps it
// against the background it is drawn on. In a dark GTK theme the fixed colours of before gave
// white text on pale orange (1.4:1) and white charts.
#pragma once

#include <QColor>
#include <QPalette>

class QChart;

namespace lorascope::ui {

// WCAG 2.x relative luminance of an sRGB colour, 0 (black) to 1 (white).
double relativeLuminance(const QColor& c);
// WCAG 2.x contrast ratio, 1 (same) to 21 (black on white); order does not matter.
double contrastRatio(const QColor& a, const QColor& b);
constexpr double kWcagAa = 4.5;   // normal text

// Whether the palette is a dark one: the colour scheme where Qt reports it (6.5+), else whether
// its window is darker than its text.
bool isDark(const QPalette& palette);

// `colour`'s hue and saturation at the lightness nearest its own that reaches `ratio` against
// `against` (lighter when `against` is dark, darker when it is light).
QColor withContrast(const QColor& colour, const QColor& against, double ratio = kWcagAa);

// The comparison view's "differs" background: orange, as light or dark as the palette's text needs.
QColor differHighlight(const QPalette& palette);
// Status texts on the palette's base: failed, running, a warning, and the error colour of labels.
QColor errorText(const QPalette& palette);
QColor runningText(const QPalette& palette);
QColor warningText(const QPalette& palette);
// A subdued line or strip on the base (grids, the timeline's padding strip).
QColor subdued(const QPalette& palette);

// A chart's background, title, axis labels and grid from `palette` (Qt Charts' own theme stays white).
void applyPalette(QChart* chart, const QPalette& palette);

}  // namespace lorascope::ui
