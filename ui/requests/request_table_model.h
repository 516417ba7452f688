// The request board's model: one row per submitted request, updated once per drain tick with a
// single dataChanged over the rows that moved.
#pragma once

#include <QAbstractTableModel>
#include <unordered_map>
#include <vector>

#include "requests/request_record.h"

namespace lorascope::ui {

class RequestTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColId, ColAdapter, ColStatus, ColPrompt, ColOutput, ColTokens, ColTokensPerSec, ColTtft, ColFinish, ColumnCount };
    enum Role { TicketRole = Qt::UserRole + 1, FullTextRole };

    explicit RequestTableModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const RequestRecord* record(Ticket ticket) const;
    const RequestRecord& recordAt(int row) const { return records_.at(size_t(row)); }
    int rowOf(Ticket ticket) const;
    const std::vector<RequestRecord>& records() const { return records_; }
    std::vector<Ticket> ticketsInGroup(int compare_group) const;
    int unfinishedCount() const;
    void clearFinished();
    // Marks a row as forked from another request's token: its Id column says from which
    // ("<client id> @ token N"), its prompt shows the text it continues (a fork is sent as ids).
    void setForkedFrom(Ticket ticket, const QString& origin, const QString& prompt, int offset = 0);
    // Moves a row into another comparison (0: none), e.g. a blend column replaced by a newer blend.
    void setCompareGroup(Ticket ticket, int compare_group);

public Q_SLOTS:
    void addRequest(const lorascope::ui::SubmittedRequest& request);
    void applyDrain(const lorascope::ui::DrainBatch& batch);

Q_SIGNALS:
    void requestFinished(lorascope::ui::Ticket ticket);
    void allFinished();

private:
    std::vector<RequestRecord> records_;
    std::unordered_map<Ticket, int> row_of_;
};

}  // namespace lorascope::ui
