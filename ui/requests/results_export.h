// Request results as JSON Lines and Markdown. Each JSON line is the one `lorascope-cli generate`
// writes (lorascope/finish_json.h, so finish_from_json reads it back) plus the window's own fields:
// "adapter", "prompt", "status" and "tokens_per_second"; figures not known yet are null.
#pragma once

#include <QByteArray>
#include <QString>
#include <vector>

#include "requests/request_record.h"

namespace lorascope::ui {

QByteArray resultsToJsonLines(const std::vector<RequestRecord>& records);
QString resultsToMarkdown(const std::vector<RequestRecord>& records);
// Writes by extension (.md/.markdown: Markdown, else JSON Lines); false with `error` set on failure.
bool exportResults(const std::vector<RequestRecord>& records, const QString& path, QString* error);

}  // namespace lorascope::ui
