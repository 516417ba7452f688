// The lab's summary table: one row per policy, one column per figure, each figure exactly as
// the engine library's BenchFigures defines it (lorascope/bench_report.h, the same numbers
// `lorascope-cli bench` reports). Policies still running show their figures so far.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <vector>

#include "lorascope/bench_report.h"

namespace lorascope::ui {

class LabSummaryModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Figure { TokensPerS, TtftMean, TtftP50, TtftP95, PerTokenP50, PerTokenP95, E2eMean, E2eP50, E2eP95, E2eP99, Goodput, MeanRows,
                  PaddingShare, PeakKv, Steps, Generated, Requests, Failed, WallS, QueueP50, QueueP95, QueueP99,
                  GoodputRequests, FigureCount };
    using QAbstractTableModel::QAbstractTableModel;

    // One entry per policy; a missing figure (not run yet) shows as "–".
    void setFigures(const QStringList& policies, const std::vector<const BenchFigures*>& figures);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString figureName(int figure);
    static QString format(int figure, const BenchFigures& f);
    QString toMarkdown() const;

private:
    QStringList policies_;
    std::vector<BenchFigures> figures_;
    std::vector<bool> present_;
};

}  // namespace lorascope::ui
