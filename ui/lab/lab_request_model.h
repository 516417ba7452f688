// The requests of one lab run as a table (index, engine id, adapter, prompt and new tokens,
// state, the steps it held a row, queue and first-token times): the lab's request board, where a
// click on the timeline selects the request.
#pragma once

#include <QAbstractTableModel>
#include <cstdint>

namespace lorascope::ui {

class LabRunData;

class LabRequestModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColIndex, ColId, ColAdapter, ColPrompt, ColMaxNew, ColGenerated, ColState, ColFirstStep, ColLastStep,
                  ColQueueMs, ColTtftMs, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;
    void setRun(const LabRunData* run);   // null: empty
    void runChanged();                     // the run's requests changed in place: the changed rows' dataChanged
    const LabRunData* run() const { return run_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const LabRunData* run_ = nullptr;
    int rows_ = 0;
    uint64_t seen_revision_ = 0;   // the run's revision when the view was last told
};

}  // namespace lorascope::ui
