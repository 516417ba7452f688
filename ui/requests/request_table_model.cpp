#include "requests/request_table_model.h"

#include <QBrush>
#include <QColor>
#include <QGuiApplication>
#include <algorithm>
#include <climits>

#include "common/theme.h"

namespace lorascope::ui {

namespace {
QString elide(const QString& text, int max_chars) {
    QString flat = text;
    flat.replace(QLatin1Char('\n'), QChar(0x21B5));
    return flat.size() > max_chars ? flat.left(max_chars - 1) + QChar(0x2026) : flat;
}
}  // namespace

RequestTableModel::RequestTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int RequestTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(records_.size());
}
int RequestTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RequestTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ColId: return tr("Id");
    case ColAdapter: return tr("Adapter");
    case ColStatus: return tr("Status");
    case ColPrompt: return tr("Prompt");
    case ColOutput: return tr("Output");
    case ColTokens: return tr("Tokens");
    case ColTokensPerSec: return tr("Tok/s");
    case ColTtft: return tr("TTFT ms");
    case ColFinish: return tr("Finish");
    default: return {};
    }
}

QVariant RequestTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const RequestRecord& r = records_[size_t(index.row())];
    if (role == TicketRole) return QVariant::fromValue<qulonglong>(r.ticket);
    if (role == FullTextRole) return r.text;
    if (role == Qt::ToolTipRole) {
        if (index.column() == ColPrompt) return r.prompt;
        if (index.column() == ColId && !r.forked_from.isEmpty())
            return tr("Forked from request %1 with that token replaced").arg(r.forked_from);
        if (index.column() == ColOutput) return r.outputText();
        if (index.column() == ColFinish && !r.error.isEmpty()) return r.error;
        return {};
    }
    if (role == Qt::TextAlignmentRole) {
        if (index.column() >= ColTokens && index.column() <= ColTtft) return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    if (role == Qt::ForegroundRole && index.column() == ColStatus) {
        // From the application's palette, readable on its base in light and dark themes.
        const QPalette palette = QGuiApplication::palette();
        switch (r.status) {
        case RequestStatus::Failed: return QBrush(errorText(palette));
        case RequestStatus::Cancelled: return QBrush(palette.color(QPalette::PlaceholderText));
        case RequestStatus::Running: return QBrush(runningText(palette));
        default: return r.retrying > 0 ? QVariant(QBrush(runningText(palette))) : QVariant();
        }
    }
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
    case ColId: return r.forked_from.isEmpty() ? r.client_id : tr("%1 (fork of %2)").arg(r.client_id, r.forked_from);
    case ColAdapter: return r.adapterLabel();
    case ColStatus: return r.statusText();
    case ColPrompt: return elide(r.prompt, 80);
    case ColOutput: return elide(r.outputText(), 200);
    case ColTokens: return r.generatedTokens();
    case ColTokensPerSec: {
        const double tps = r.tokensPerSecond();
        return tps > 0 ? QString::number(tps, 'f', 1) : QString();
    }
    case ColTtft: {
        const double ttft = r.ttftMs();
        return ttft >= 0 ? QString::number(ttft, 'f', 0) : QString();
    }
    case ColFinish: return r.finish_reason;
    default: return {};
    }
}

const RequestRecord* RequestTableModel::record(Ticket ticket) const {
    auto it = row_of_.find(ticket);
    return it == row_of_.end() ? nullptr : &records_[size_t(it->second)];
}

int RequestTableModel::rowOf(Ticket ticket) const {
    auto it = row_of_.find(ticket);
    return it == row_of_.end() ? -1 : it->second;
}

std::vector<Ticket> RequestTableModel::ticketsInGroup(int compare_group) const {
    std::vector<Ticket> out;
    if (compare_group <= 0) return out;
    for (const auto& r : records_)
        if (r.compare_group == compare_group) out.push_back(r.ticket);
    return out;
}

int RequestTableModel::unfinishedCount() const {
    return int(std::count_if(records_.begin(), records_.end(), [](const RequestRecord& r) { return !r.finished(); }));
}

void RequestTableModel::clearFinished() {
    // Remove finished rows as contiguous ranges, last first, so row numbers stay valid.
    for (int row = int(records_.size()) - 1; row >= 0;) {
        if (!records_[size_t(row)].finished()) { --row; continue; }
        int first = row;
        while (first > 0 && records_[size_t(first - 1)].finished()) --first;
        beginRemoveRows({}, first, row);
        records_.erase(records_.begin() + first, records_.begin() + row + 1);
        endRemoveRows();
        row = first - 1;
    }
    row_of_.clear();
    for (size_t i = 0; i < records_.size(); ++i) row_of_[records_[i].ticket] = int(i);
}

void RequestTableModel::addRequest(const SubmittedRequest& request) {
    RequestRecord r;
    r.ticket = request.ticket;
    r.client_id = request.client_id;
    r.prompt = request.prompt;
    r.adapter = request.adapter;
    r.compare_group = request.compare_group;
    r.params = request.params;
    r.input_ids = request.input_ids;
    r.merge = request.merge;
    r.since_submit.start();
    const int row = int(records_.size());
    beginInsertRows({}, row, row);
    records_.push_back(std::move(r));
    row_of_[request.ticket] = row;
    endInsertRows();
}

void RequestTableModel::setForkedFrom(Ticket ticket, const QString& origin, const QString& prompt, int offset) {
    auto it = row_of_.find(ticket);
    if (it == row_of_.end()) return;
    records_[size_t(it->second)].forked_from = origin;
    records_[size_t(it->second)].fork_offset = offset;
    records_[size_t(it->second)].prompt = prompt;
    Q_EMIT dataChanged(index(it->second, 0), index(it->second, ColumnCount - 1));
}

void RequestTableModel::setCompareGroup(Ticket ticket, int compare_group) {
    auto it = row_of_.find(ticket);
    if (it == row_of_.end()) return;
    records_[size_t(it->second)].compare_group = compare_group;
    Q_EMIT dataChanged(index(it->second, 0), index(it->second, ColumnCount - 1));
}

void RequestTableModel::applyDrain(const DrainBatch& batch) {
    int first = INT_MAX, last = -1;
    auto touch = [&](int row) { first = std::min(first, row); last = std::max(last, row); };
    for (const auto& n : batch.retries) {
        auto it = row_of_.find(n.ticket);
        if (it == row_of_.end() || records_[size_t(it->second)].finished()) continue;
        RequestRecord& r = records_[size_t(it->second)];
        r.retrying = n.attempt;
        r.retry_reason = n.reason;
        touch(it->second);
    }
    for (const auto& t : batch.tokens) {
        auto it = row_of_.find(t.ticket);
        if (it == row_of_.end()) continue;
        RequestRecord& r = records_[size_t(it->second)];
        if (r.finished()) continue;
        const qint64 now = r.since_submit.elapsed();
        if (r.first_token_ms < 0) r.first_token_ms = now;
        r.last_token_ms = now;
        r.status = RequestStatus::Running;
        r.retrying = 0;   // the stream is back
        r.text += t.token.text;
        r.tokens.push_back(t.token);
        touch(it->second);
    }
    for (const auto& step : batch.steps) {
        for (Ticket ticket : step.row_tickets) {
            auto it = row_of_.find(ticket);
            if (it == row_of_.end()) continue;
            RequestRecord& r = records_[size_t(it->second)];
            if (r.status == RequestStatus::Queued) {
                r.status = RequestStatus::Running;
                touch(it->second);
            }
        }
    }
    std::vector<Ticket> finished;
    for (const auto& f : batch.finishes) {
        auto it = row_of_.find(f.ticket);
        if (it == row_of_.end()) continue;
        RequestRecord& r = records_[size_t(it->second)];
        if (r.finished()) continue;
        const FinishEvent& e = f.event;
        r.status = e.reason == FinishReason::Error       ? RequestStatus::Failed
                   : e.reason == FinishReason::Cancelled ? RequestStatus::Cancelled
                                                         : RequestStatus::Finished;
        r.finish_reason = finishReasonLabel(e.reason);
        r.error = QString::fromStdString(e.error);
        // The engine's full text is authoritative (a stop sequence is excluded from it).
        if (e.reason != FinishReason::Error || !e.text.empty()) r.text = QString::fromStdString(e.text);
        for (size_t i = 0; i < e.logprobs.size() && i < r.tokens.size(); ++i) r.tokens[i].logprob = e.logprobs[i];
        for (size_t i = 0; i < e.alternatives.size() && i < r.tokens.size(); ++i)
            if (r.tokens[i].alternatives.empty()) r.tokens[i].alternatives = e.alternatives[i];
        r.prompt_logprobs = e.prompt_logprobs;
        r.usage = e.usage;
        r.have_usage = true;
        r.sequences = e.sequences;
        touch(it->second);
        finished.push_back(f.ticket);
    }
    if (last >= 0) Q_EMIT dataChanged(index(first, 0), index(last, ColumnCount - 1));
    for (Ticket t : finished) Q_EMIT requestFinished(t);
    if (!finished.empty() && unfinishedCount() == 0) Q_EMIT allFinished();
}

}  // namespace lorascope::ui
