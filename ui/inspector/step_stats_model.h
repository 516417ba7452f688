// History of engine steps (newest last), bounded, for the batching inspector's table, charts
// and timeline. One insert (and at most one trim) per drain tick.
#pragma once

#include <QAbstractTableModel>
#include <deque>

#include "engine_link/bridge_events.h"

namespace lorascope::ui {

class StepStatsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColStep, ColRows, ColRowLimit, ColPrefill, ColDecode, ColPadded, ColPaddingShare, ColKvInUse, ColKvAllocated,
                  ColQueue, ColStepMs, ColTokensPerSec, ColAdapters, ColumnCount };

    explicit StepStatsModel(int capacity = 2000, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const std::deque<StepSample>& samples() const { return samples_; }
    int capacity() const { return capacity_; }
    void clear();

    static double paddingShare(const StepStats& s);
    static double tokensPerSecond(const StepStats& s);   // generated tokens per second in this step

public Q_SLOTS:
    void applyDrain(const lorascope::ui::DrainBatch& batch);

Q_SIGNALS:
    void samplesAppended(int count);

private:
    std::deque<StepSample> samples_;
    int capacity_;
};

}  // namespace lorascope::ui
