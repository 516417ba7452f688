#include "requests/results_export.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include "lorascope/finish_json.h"

namespace lorascope::ui {

namespace {

// What the engine would have said of the request when it finished, from what the window holds.
FinishEvent finishEventOf(const RequestRecord& r) {
    FinishEvent e;
    e.client_id = r.client_id.toStdString();
    e.reason = finish_reason_from_string(r.finish_reason.toStdString()).value_or(FinishReason::Error);
    e.text = r.text.toStdString();
    e.error = r.error.toStdString();
    for (const auto& t : r.tokens) {
        e.token_ids.push_back(t.token_id);
        e.logprobs.push_back(t.logprob);
    }
    e.sequences = r.sequences;
    if (r.have_usage) e.usage = r.usage;
    e.usage.generated_tokens = r.generatedTokens();
    if (r.ttftMs() >= 0) e.usage.time_to_first_token_ms = r.ttftMs();
    return e;
}

}  // namespace

QByteArray resultsToJsonLines(const std::vector<RequestRecord>& records) {
    QByteArray out;
    for (const auto& r : records) {
        // The CLI's line (lorascope/finish_json.h), plus what only the window knows.
        QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(finish_to_json(finishEventOf(r)))).object();
        if (!r.finished()) o.insert(QStringLiteral("finish_reason"), QJsonValue());
        if (!r.have_usage) {
            for (const char* unknown : {"prompt_tokens", "queue_ms", "total_ms"}) o.insert(QLatin1String(unknown), QJsonValue());
        }
        if (r.ttftMs() < 0) o.insert(QStringLiteral("time_to_first_token_ms"), QJsonValue());
        o.insert(QStringLiteral("adapter"), r.adapter.isEmpty() ? QJsonValue(QJsonValue::Null) : QJsonValue(r.adapter));
        o.insert(QStringLiteral("prompt"), r.prompt);
        o.insert(QStringLiteral("status"), statusLabel(r.status));
        o.insert(QStringLiteral("tokens_per_second"), r.tokensPerSecond());
        out += QJsonDocument(o).toJson(QJsonDocument::Compact);
        out += '\n';
    }
    return out;
}

namespace {
QString cell(QString s) {
    s.replace(QLatin1Char('|'), QStringLiteral("\\|"));
    s.replace(QLatin1Char('\n'), QLatin1Char(' '));
    return s;
}
QString fence(const QString& text) {
    // A fence longer than any backtick run inside, so the text cannot close it.
    int longest = 0, run = 0;
    for (QChar c : text) {
        run = c == QLatin1Char('`') ? run + 1 : 0;
        longest = qMax(longest, run);
    }
    return QString(qMax(3, longest + 1), QLatin1Char('`'));
}
}  // namespace

QString resultsToMarkdown(const std::vector<RequestRecord>& records) {
    QString md = QStringLiteral("# Lorascope results\n\n| Id | Adapter | Status | Tokens | Tok/s | TTFT ms | Finish |\n|---|---|---|---:|---:|---:|---|\n");
    for (const auto& r : records) {
        md += QStringLiteral("| %1 | %2 | %3 | %4 | %5 | %6 | %7 |\n")
                  .arg(cell(r.client_id), cell(r.adapterLabel()), statusLabel(r.status))
                  .arg(r.generatedTokens())
                  .arg(r.tokensPerSecond(), 0, 'f', 1)
                  .arg(r.ttftMs() >= 0 ? QString::number(r.ttftMs(), 'f', 0) : QStringLiteral("–"))
                  .arg(cell(r.finish_reason));
    }
    for (const auto& r : records) {
        md += QStringLiteral("\n## %1 (%2)\n\n**Prompt**\n\n%3%4\n%5\n%3\n\n**Output**\n\n%6%4\n%7\n%6\n")
                  .arg(cell(r.client_id), cell(r.adapterLabel()), fence(r.prompt), QStringLiteral("text"), r.prompt,
                       fence(r.text), r.text);
        if (!r.error.isEmpty()) md += QStringLiteral("\n**Error:** %1\n").arg(cell(r.error));
    }
    return md;
}

bool exportResults(const std::vector<RequestRecord>& records, const QString& path, QString* error) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    const QByteArray data = (suffix == QLatin1String("md") || suffix == QLatin1String("markdown"))
                                ? resultsToMarkdown(records).toUtf8()
                                : resultsToJsonLines(records);
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(data) != data.size() || !f.commit()) {
        if (error) *error = QStringLiteral("%1: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

}  // namespace lorascope::ui
