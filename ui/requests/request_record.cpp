#include "requests/request_record.h"

#include <QCoreApplication>

#include <algorithm>

namespace lorascope::ui {

QString statusLabel(RequestStatus status) {
    switch (status) {
    case RequestStatus::Queued: return QCoreApplication::translate("Requests", "queued");
    case RequestStatus::Running: return QCoreApplication::translate("Requests", "running");
    case RequestStatus::Finished: return QCoreApplication::translate("Requests", "finished");
    case RequestStatus::Cancelled: return QCoreApplication::translate("Requests", "cancelled");
    case RequestStatus::Failed: return QCoreApplication::translate("Requests", "error");
    }
    return {};
}

// Our own labels (lowercase, as the CLI's JSON writes them) so the UI does not need the engine library.
QString finishReasonLabel(FinishReason reason) {
    switch (reason) {
    case FinishReason::Eos: return QStringLiteral("eos");
    case FinishReason::Length: return QStringLiteral("length");
    case FinishReason::Stop: return QStringLiteral("stop");
    case FinishReason::Cancelled: return QStringLiteral("cancelled");
    case FinishReason::Error: return QStringLiteral("error");
    }
    return {};
}

QString RequestRecord::statusText() const {
    if (retrying > 0 && !finished()) return QCoreApplication::translate("Requests", "retrying (%1)").arg(retrying);
    return statusLabel(status);
}

QString RequestRecord::detailText() const {
    // A failure keeps what streamed before it: the text first, the error after it.
    if (!error.isEmpty()) return text.isEmpty() ? error : text + QStringLiteral("\n\n\u26A0 ") + error;
    if (retrying > 0 && !finished()) {
        const QString note = statusText() + (retry_reason.isEmpty() ? QString() : QStringLiteral(": ") + retry_reason);
        return text.isEmpty() ? note : text + QStringLiteral("\n\n") + note;
    }
    QString out = text;
    for (size_t i = 1; i < sequences.size(); ++i)
        out += (sequences[i].score ? QStringLiteral("\n\n[sequence %1 of %2, score %3]\n")
                                         .arg(i + 1)
                                         .arg(sequences.size())
                                         .arg(*sequences[i].score, 0, 'f', 4)
                                   : QStringLiteral("\n\n[sequence %1 of %2]\n").arg(i + 1).arg(sequences.size())) +
               QString::fromStdString(sequences[i].text);
    return out;
}

qint64 RequestRecord::generatedTokens() const {
    // A failed request's usage may count nothing although tokens streamed before the failure.
    return have_usage ? std::max<qint64>(usage.generated_tokens, qint64(tokens.size())) : qint64(tokens.size());
}

QString RequestRecord::outputText() const {
    if (error.isEmpty()) return text;
    return text.isEmpty() ? error : text + QStringLiteral("  \u26A0 ") + error;
}

int RequestRecord::tokenAtTextOffset(int offset) const {
    if (offset < 0) return -1;
    int start = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const QString& piece = tokens[i].text;
        const int end = start + int(piece.size());
        if (end > text.size() || QStringView(text).mid(start, piece.size()) != piece) return -1;
        if (offset < end) return int(i);
        start = end;
    }
    return -1;
}

double RequestRecord::ttftMs() const {
    if (have_usage && usage.generated_tokens > 0) return usage.time_to_first_token_ms;
    return first_token_ms >= 0 ? double(first_token_ms) : -1.0;
}

double RequestRecord::tokensPerSecond() const {
    const qint64 n = generatedTokens();
    if (have_usage && usage.total_ms > usage.time_to_first_token_ms && n > 1)
        return (n - 1) * 1000.0 / (usage.total_ms - usage.time_to_first_token_ms);
    if (first_token_ms >= 0 && last_token_ms > first_token_ms && n > 1)
        return (n - 1) * 1000.0 / double(last_token_ms - first_token_ms);
    return 0.0;
}

}  // namespace lorascope::ui
