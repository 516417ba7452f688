#include "inspector/step_stats_model.h"

#include <QStringList>

#include "common/format.h"
#include "engine_link/step_reason.h"

namespace lorascope::ui {

StepStatsModel::StepStatsModel(int capacity, QObject* parent) : QAbstractTableModel(parent), capacity_(qMax(1, capacity)) {}

int StepStatsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(samples_.size()); }
int StepStatsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

double StepStatsModel::paddingShare(const StepStats& s) {
    const double computed = double(s.prefill_tokens + s.decode_tokens + s.padded_tokens);
    return computed > 0 ? double(s.padded_tokens) / computed : 0.0;
}

double StepStatsModel::tokensPerSecond(const StepStats& s) {
    // Every row yields one token per step (prefill rows yield their first one).
    return s.wall_ms > 0 ? double(s.rows) * 1000.0 / s.wall_ms : 0.0;
}

QVariant StepStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ColStep: return tr("Step");
    case ColRows: return tr("Rows");
    case ColRowLimit: return tr("Row limit");
    case ColPrefill: return tr("Prefill tok");
    case ColDecode: return tr("Decode tok");
    case ColPadded: return tr("Padded tok");
    case ColPaddingShare: return tr("Padding %");
    case ColKvInUse: return tr("KV in use");
    case ColKvAllocated: return tr("KV allocated");
    case ColQueue: return tr("Queue");
    case ColStepMs: return tr("Step ms");
    case ColTokensPerSec: return tr("Tok/s");
    case ColAdapters: return tr("Rows per adapter");
    default: return {};
    }
}

QVariant StepStatsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    if (role == Qt::TextAlignmentRole) return index.column() == ColAdapters ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    if (role == Qt::ToolTipRole) return stepPrefillReason(samples_[size_t(index.row())].stats);
    if (role != Qt::DisplayRole) return {};
    const StepStats& s = samples_[size_t(index.row())].stats;
    switch (index.column()) {
    case ColStep: return qint64(s.step);
    case ColRows: return qint64(s.rows);
    case ColRowLimit: return s.row_limit > 0 ? QVariant(qint64(s.row_limit)) : QVariant();
    case ColPrefill: return qint64(s.prefill_tokens);
    case ColDecode: return qint64(s.decode_tokens);
    case ColPadded: return qint64(s.padded_tokens);
    case ColPaddingShare: return QString::number(100.0 * paddingShare(s), 'f', 1);
    case ColKvInUse: return humanBytes(s.kv_bytes_in_use);
    case ColKvAllocated: return humanBytes(s.kv_bytes_allocated);
    case ColQueue: return qint64(s.queue_depth);
    case ColStepMs: return QString::number(s.wall_ms, 'f', 2);
    case ColTokensPerSec: return QString::number(tokensPerSecond(s), 'f', 0);
    case ColAdapters: {
        QStringList parts;
        for (const auto& [name, n] : s.rows_per_adapter)
            parts << QStringLiteral("%1: %2").arg(name.empty() ? QStringLiteral("base") : QString::fromStdString(name)).arg(n);
        return parts.join(QStringLiteral(", "));
    }
    default: return {};
    }
}

void StepStatsModel::clear() {
    if (samples_.empty()) return;
    beginResetModel();
    samples_.clear();
    endResetModel();
}

void StepStatsModel::applyDrain(const DrainBatch& batch) {
    if (batch.steps.empty()) return;
    // Only the newest `capacity_` of this tick's steps can survive; skip the rest up front.
    size_t skip = batch.steps.size() > size_t(capacity_) ? batch.steps.size() - size_t(capacity_) : 0;
    const int incoming = int(batch.steps.size() - skip);
    const int overflow = int(samples_.size()) + incoming - capacity_;
    if (overflow > 0) {
        const int remove = qMin(overflow, int(samples_.size()));
        if (remove > 0) {
            beginRemoveRows({}, 0, remove - 1);
            samples_.erase(samples_.begin(), samples_.begin() + remove);
            endRemoveRows();
        }
    }
    const int first = int(samples_.size());
    beginInsertRows({}, first, first + incoming - 1);
    for (size_t i = skip; i < batch.steps.size(); ++i) samples_.push_back(batch.steps[i]);
    endInsertRows();
    Q_EMIT samplesAppended(incoming);
}

}  // namespace lorascope::ui
