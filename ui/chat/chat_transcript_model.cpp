#include "chat/chat_transcript_model.h"

namespace lorascope::ui {

int ChatTranscriptModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(turns_.size());
}

QVariant ChatTranscriptModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const ChatTurn& t = turns_[static_cast<size_t>(index.row())];
    switch (role) {
        case Qt::DisplayRole: {
            QString text = (t.role == QLatin1String("user") ? tr("You") : tr("Assistant")) + QStringLiteral(": ") + t.text;
            if (t.streaming) text += QStringLiteral(" \u2026");
            if (!t.error.isEmpty()) text += QStringLiteral("\n") + tr("(failed: %1)").arg(t.error);
            return text;
        }
        case Qt::ToolTipRole: return t.error.isEmpty() ? QVariant() : QVariant(t.error);
        case TurnRole: return t.role;
        case StreamingRole: return t.streaming;
        case ErrorRole: return t.error;
        default: return {};
    }
}

void ChatTranscriptModel::addUserTurn(const QString& text) {
    beginInsertRows({}, rowCount(), rowCount());
    turns_.push_back({QStringLiteral("user"), text, 0, false, {}});
    endInsertRows();
}

void ChatTranscriptModel::beginAnswer(Ticket ticket) {
    beginInsertRows({}, rowCount(), rowCount());
    turns_.push_back({QStringLiteral("assistant"), {}, ticket, true, {}});
    endInsertRows();
}

int ChatTranscriptModel::rowOf(Ticket ticket) const {
    for (size_t i = 0; i < turns_.size(); ++i)
        if (turns_[i].ticket == ticket && turns_[i].streaming) return static_cast<int>(i);
    return -1;
}

bool ChatTranscriptModel::appendDelta(Ticket ticket, const QString& text) {
    const int row = rowOf(ticket);
    if (row < 0) return false;
    turns_[static_cast<size_t>(row)].text += text;
    Q_EMIT dataChanged(index(row), index(row));
    return true;
}

bool ChatTranscriptModel::finishAnswer(Ticket ticket, const FinishEvent& f) {
    const int row = rowOf(ticket);
    if (row < 0) return false;
    ChatTurn& t = turns_[static_cast<size_t>(row)];
    t.streaming = false;
    if (f.reason == FinishReason::Error || f.reason == FinishReason::Cancelled)
        t.error = f.reason == FinishReason::Cancelled ? tr("cancelled") : QString::fromStdString(f.error);
    else t.text = QString::fromStdString(f.text);   // the finish's text: stop strings cut, held bytes flushed
    Q_EMIT dataChanged(index(row), index(row));
    return true;
}

bool ChatTranscriptModel::replaceLastUserTurn(const QString& text) {
    int last = -1;
    for (size_t i = 0; i < turns_.size(); ++i)
        if (turns_[i].role == QLatin1String("user")) last = static_cast<int>(i);
    if (last < 0) return false;
    if (last + 1 < rowCount()) {
        beginRemoveRows({}, last + 1, rowCount() - 1);
        turns_.resize(static_cast<size_t>(last + 1));
        endRemoveRows();
    }
    turns_[static_cast<size_t>(last)].text = text;
    Q_EMIT dataChanged(index(last), index(last));
    return true;
}

QString ChatTranscriptModel::lastUserText() const {
    for (auto it = turns_.rbegin(); it != turns_.rend(); ++it)
        if (it->role == QLatin1String("user")) return it->text;
    return {};
}

void ChatTranscriptModel::clear() {
    beginResetModel();
    turns_.clear();
    endResetModel();
}

bool ChatTranscriptModel::streaming() const {
    for (const auto& t : turns_)
        if (t.streaming) return true;
    return false;
}

std::vector<ChatMessage> ChatTranscriptModel::messages() const {
    std::vector<ChatMessage> out;
    for (const auto& t : turns_) {
        if (t.streaming || !t.error.isEmpty()) continue;
        ChatMessage m;
        m.role = t.role.toStdString();
        m.content = t.text.toStdString();
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace lorascope::ui
