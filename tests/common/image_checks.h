// Whether a screenshot shows something: a blank or single-colour image (a window that failed to
// paint, an offscreen surface never rendered) has no spread in its pixels.
#pragma once

#include <QColor>
#include <QImage>
#include <QSet>
#include <QString>

#include <algorithm>
#include <cmath>

namespace lorascope::test {

struct PixelSpread {
    double luma_stddev = 0;   // of 0..255 luma over all pixels
    int colours = 0;          // distinct RGB values, counted up to 64
};

inline PixelSpread pixel_spread(const QImage& image) {
    PixelSpread s;
    if (image.isNull()) return s;
    const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
    double sum = 0, sum_sq = 0;
    QSet<QRgb> seen;
    const qint64 n = qint64(rgb.width()) * rgb.height();
    for (int y = 0; y < rgb.height(); ++y) {
        const QRgb* line = reinterpret_cast<const QRgb*>(rgb.constScanLine(y));
        for (int x = 0; x < rgb.width(); ++x) {
            const double luma = 0.299 * qRed(line[x]) + 0.587 * qGreen(line[x]) + 0.114 * qBlue(line[x]);
            sum += luma;
            sum_sq += luma * luma;
            if (seen.size() < 64) seen.insert(line[x] & 0xffffff);
        }
    }
    const double mean = sum / double(n);
    s.luma_stddev = std::sqrt(std::max(0.0, sum_sq / double(n) - mean * mean));
    s.colours = int(seen.size());
    return s;
}

// Empty when the image has text, widgets and charts in it (a spread of luma and several colours);
// otherwise why not.
inline QString blank_image_problem(const QImage& image, const QString& name) {
    if (image.isNull()) return name + QStringLiteral(": not an image");
    const PixelSpread s = pixel_spread(image);
    if (s.luma_stddev < 8.0 || s.colours < 8)
        return QStringLiteral("%1 looks blank: luma stddev %2, %3 distinct colours").arg(name).arg(s.luma_stddev).arg(s.colours);
    return {};
}

}  // namespace lorascope::test
