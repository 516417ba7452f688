// The CSV files `lorascope-cli bench` and the batching lab write (--steps-csv, --requests-csv,
// lab-steps-*.csv, lab-requests-*.csv) read back as rows of column -> cell, so that a test can
// recompute a report's figures from the records behind them.
#pragma once

#include <QFile>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

namespace lorascope::test {

using CsvRow = std::map<QString, QString>;

// CSV text (header first, no quoting: the engine's CSVs hold none) as rows.
inline std::vector<CsvRow> parseCsv(const QString& text) {
    const QStringList lines = text.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    std::vector<CsvRow> rows;
    if (lines.isEmpty()) return rows;
    const QStringList header = lines[0].split(QLatin1Char(','));
    for (int i = 1; i < lines.size(); ++i) {
        const QStringList cells = lines[i].split(QLatin1Char(','));
        CsvRow row;
        for (int c = 0; c < header.size() && c < cells.size(); ++c) row[header[c]] = cells[c];
        rows.push_back(row);
    }
    return rows;
}

inline std::vector<CsvRow> readCsv(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return parseCsv(QString::fromUtf8(f.readAll()));
}

inline double csvNumber(const CsvRow& row, const char* column) { return row.at(QString::fromLatin1(column)).toDouble(); }

// Equal up to the last bits that printing and parsing may change.
inline bool sameNumber(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// The mean of values read back (a report's ttft_ms.mean, e2e_ms.mean); 0 for none, as the report gives.
inline double meanOf(const std::vector<double>& values) {
    return values.empty() ? 0.0 : std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
}

}  // namespace lorascope::test
