#include "lab/lab_summary_model.h"

#include "common/format.h"

namespace lorascope::ui {

void LabSummaryModel::setFigures(const QStringList& policies, const std::vector<const BenchFigures*>& figures) {
    const bool reshape = policies != policies_;
    if (reshape) beginResetModel();
    policies_ = policies;
    figures_.assign(size_t(policies.size()), BenchFigures());
    present_.assign(size_t(policies.size()), false);
    for (size_t i = 0; i < figures.size() && i < figures_.size(); ++i)
        if (figures[i]) {
            figures_[i] = *figures[i];
            present_[i] = true;
        }
    if (reshape) endResetModel();
    else if (!policies_.isEmpty()) Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, FigureCount - 1));
}

int LabSummaryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(policies_.size()); }
int LabSummaryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : FigureCount; }

QString LabSummaryModel::figureName(int figure) {
    switch (figure) {
        case TokensPerS: return tr("Tokens\nper s");
        case TtftMean: return tr("TTFT\nmean ms");
        case TtftP50: return tr("TTFT\np50 ms");
        case TtftP95: return tr("TTFT\np95 ms");
        case PerTokenP50: return tr("Token\np50 ms");
        case PerTokenP95: return tr("Token\np95 ms");
        case E2eMean: return tr("E2E\nmean ms");
        case E2eP50: return tr("E2E\np50 ms");
        case E2eP95: return tr("E2E\np95 ms");
        case E2eP99: return tr("E2E\np99 ms");
        case Goodput: return tr("Goodput\n%");
        case QueueP50: return tr("Queue\np50 ms");
        case QueueP95: return tr("Queue\np95 ms");
        case QueueP99: return tr("Queue\np99 ms");
        case GoodputRequests: return tr("Goodput\nrequests");
        case MeanRows: return tr("Mean\nrows");
        case PaddingShare: return tr("Padding\n%");
        case PeakKv: return tr("Peak\nKV");
        case Steps: return tr("Steps");
        case Generated: return tr("Generated\ntokens");
        case Requests: return tr("Requests\n(finished)");
        case Failed: return tr("Failed");
        case WallS: return tr("Wall\n(s)");
    }
    return {};
}

QString LabSummaryModel::format(int figure, const BenchFigures& f) {
    switch (figure) {
        case TokensPerS: return QString::number(f.tokens_per_s, 'f', 1);
        case TtftMean: return QString::number(f.ttft_mean_ms, 'f', 1);
        case TtftP50: return QString::number(f.ttft_p50_ms, 'f', 1);
        case TtftP95: return QString::number(f.ttft_p95_ms, 'f', 1);
        case PerTokenP50: return QString::number(f.per_token_p50_ms, 'f', 2);
        case PerTokenP95: return QString::number(f.per_token_p95_ms, 'f', 2);
        case E2eMean: return QString::number(f.e2e_mean_ms, 'f', 1);
        case E2eP50: return QString::number(f.e2e_p50_ms, 'f', 1);
        case E2eP95: return QString::number(f.e2e_p95_ms, 'f', 1);
        case E2eP99: return QString::number(f.e2e_p99_ms, 'f', 1);
        case Goodput: return QString::number(100.0 * f.goodput_share, 'f', 1);
        case QueueP50: return QString::number(f.queue_p50_ms, 'f', 1);
        case QueueP95: return QString::number(f.queue_p95_ms, 'f', 1);
        case QueueP99: return QString::number(f.queue_p99_ms, 'f', 1);
        case GoodputRequests: return QString::number(f.goodput_requests);
        case MeanRows: return QString::number(f.mean_batch_rows, 'f', 2);
        case PaddingShare: return QString::number(100.0 * f.padding_share, 'f', 1);
        case PeakKv: return humanBytes(f.peak_kv_bytes);
        case Steps: return QString::number(f.steps);
        case Generated: return QString::number(f.generated_tokens);
        case Requests: return QStringLiteral("%1 (%2)").arg(f.requests).arg(f.finished);
        case Failed: return QString::number(f.failed_requests);
        case WallS: return QString::number(f.wall_s, 'f', 2);
    }
    return {};
}

QVariant LabSummaryModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(figures_.size())) return {};
    if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole) return {};
    if (!present_[size_t(index.row())]) return QStringLiteral("–");
    return format(index.column(), figures_[size_t(index.row())]);
}

QVariant LabSummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) return {};
    if (orientation == Qt::Horizontal) return figureName(section);
    return section < policies_.size() ? policies_[section] : QVariant();
}

QString LabSummaryModel::toMarkdown() const {
    QString out = QStringLiteral("| Figure |");
    for (const QString& p : policies_) out += QStringLiteral(" %1 |").arg(p);
    out += QStringLiteral("\n|---|");
    for (int i = 0; i < policies_.size(); ++i) out += QStringLiteral("---:|");
    out += QLatin1Char('\n');
    for (int f = 0; f < FigureCount; ++f) {
        out += QStringLiteral("| %1 |").arg(figureName(f).replace(QLatin1Char('\n'), QLatin1Char(' ')));
        for (size_t i = 0; i < figures_.size(); ++i)
            out += QStringLiteral(" %1 |").arg(present_[i] ? format(f, figures_[i]) : QStringLiteral("–"));
        out += QLatin1Char('\n');
    }
    return out;
}

}  // namespace lorascope::ui
