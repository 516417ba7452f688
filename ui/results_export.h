// Request results as JSON Lines (one object per request, the CLI's field names) and Markdown.
#pragma once

#include <QByteArray>
#include <QString>
#include <vector>

#include "request_record.h"

namespace lorascope::ui {

QByteArray resultsToJsonLines(const std::vector<RequestRecord>& records);
QString resultsToMarkdown(const std::vector<RequestRecord>& records);
// Writes by extension (.md/.markdown: Markdown, else JSON Lines); false with `error` set on failure.
bool exportResults(const std::vector<RequestRecord>& records, const QString& path, QString* error);

}  // namespace lorascope::ui
