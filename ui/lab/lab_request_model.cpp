#include "lab/lab_request_model.h"

#include "lab/lab_run_data.h"

namespace lorascope::ui {

void LabRequestModel::setRun(const LabRunData* run) {
    beginResetModel();
    run_ = run;
    rows_ = run ? int(run->requests().size()) : 0;
    seen_revision_ = run ? run->revision() : 0;
    endResetModel();
}

void LabRequestModel::runChanged() {
    const int rows = run_ ? int(run_->requests().size()) : 0;
    if (rows != rows_) {
        setRun(run_);
        return;
    }
    // One dataChanged per run of changed rows: the views (and the column fitter, which measures
    // each changed cell's text) then pay for the rows a tick touched, not for all of them.
    if (!run_) return;
    const auto& requests = run_->requests();
    int first = -1;
    for (int row = 0; row <= rows; ++row) {
        const bool changed = row < rows && requests[size_t(row)].revision > seen_revision_;
        if (changed && first < 0) first = row;
        if (!changed && first >= 0) {
            Q_EMIT dataChanged(index(first, 0), index(row - 1, ColumnCount - 1));
            first = -1;
        }
    }
    seen_revision_ = run_->revision();
}

int LabRequestModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_; }
int LabRequestModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LabRequestModel::data(const QModelIndex& index, int role) const {
    if (!run_ || !index.isValid() || index.row() >= rows_) return {};
    if (role == Qt::TextAlignmentRole)
        return int((index.column() == ColAdapter || index.column() == ColState ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter);
    if (role != Qt::DisplayRole) return {};
    const LabRequest& r = run_->requests()[size_t(index.row())];
    const bool done = r.state == LabRequestState::Finished || r.state == LabRequestState::Cancelled || r.state == LabRequestState::Error;
    switch (index.column()) {
        case ColIndex: return index.row();
        case ColId: return r.id ? QVariant(qulonglong(r.id)) : QVariant();
        case ColAdapter: return r.adapter.isEmpty() ? tr("base") : r.adapter;
        case ColPrompt: return qlonglong(r.prompt_tokens);
        case ColMaxNew: return qlonglong(r.max_new_tokens);
        case ColGenerated: return qlonglong(r.generated);
        case ColState: return r.error.isEmpty() ? labStateName(r.state) : labStateName(r.state) + QStringLiteral(": ") + r.error;
        case ColFirstStep: return r.first_step >= 0 ? QVariant(qlonglong(r.first_step)) : QVariant();
        case ColLastStep: return r.last_step >= 0 ? QVariant(qlonglong(r.last_step)) : QVariant();
        case ColQueueMs: return done ? QVariant(QString::number(r.queue_ms, 'f', 1)) : QVariant();
        case ColTtftMs: return done ? QVariant(QString::number(r.ttft_ms, 'f', 1)) : QVariant();
    }
    return {};
}

QVariant LabRequestModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case ColIndex: return tr("#");
        case ColId: return tr("Engine id");
        case ColAdapter: return tr("Adapter");
        case ColPrompt: return tr("Prompt tokens");
        case ColMaxNew: return tr("Max new");
        case ColGenerated: return tr("Generated");
        case ColState: return tr("State");
        case ColFirstStep: return tr("Joined at step");
        case ColLastStep: return tr("Left at step");
        case ColQueueMs: return tr("Queued (ms)");
        case ColTtftMs: return tr("TTFT (ms)");
    }
    return {};
}

}  // namespace lorascope::ui
