// Prompts as the composer collects them: typed (one, or one per line) or read from a .txt
// (one per line) or .jsonl file ({"prompt": ..., "id": ..., "adapter": ..., "params": {...}}),
// where "params" overrides the parameters panel for that prompt.
#pragma once

#include <QString>
#include <optional>
#include <vector>

#include "lorascope/params.h"

namespace lorascope::ui {

struct PromptItem {
    QString client_id;                 // empty: the bridge numbers it
    QString prompt;
    std::optional<QString> adapter;    // from the file: overrides the composer's targets ("" = base)
    GenerationParams overrides;
};

std::vector<PromptItem> promptsFromLines(const QString& text);   // blank lines skipped
// Throws lorascope::Error naming the file and line on malformed JSON or unknown fields.
std::vector<PromptItem> promptsFromJsonLines(const QByteArray& data, const QString& path_for_errors);
std::vector<PromptItem> promptsFromFile(const QString& path);     // by extension; throws lorascope::Error

// Fields set in `over` replace those in `base`.
GenerationParams mergeParams(const GenerationParams& base, const GenerationParams& over);

}  // namespace lorascope::ui
