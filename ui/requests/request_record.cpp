#include "requests/request_record.h"

#include <QCoreApplication>

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

QString RequestRecord::detailText() const {
    if (!error.isEmpty()) return error;
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
