// Engine events as the GUI thread sees them after a drain: keyed by the bridge's own ticket
// (unique for the whole session, across model reloads, unlike engine request ids).
#pragma once

#include <QMetaType>
#include <QString>
#include <QtGlobal>
#include <optional>
#include <vector>

#include "lorascope/engine.h"

namespace lorascope::ui {

using Ticket = quint64;

// One generated token as the window keeps it: the bridge hands the request table exactly this.
struct StreamedToken {
    int64_t token_id = 0;
    QString text;
    float logprob = 0.0f;
    bool special = false;
    std::vector<TokenAlternative> alternatives;   // params.top_alternatives of them, most likely first
};

struct TokenDelta {
    Ticket ticket = 0;
    StreamedToken token;
};

struct FinishInfo {
    Ticket ticket = 0;
    FinishEvent event;
};

// A remote request's connection retries (RetryEvent): attempt n >= 1, 0 once the server answers.
struct RetryNote {
    Ticket ticket = 0;
    int attempt = 0;
    QString reason;
};

struct StepSample {
    StepStats stats;
    std::vector<Ticket> row_tickets;   // row_requests translated; 0 where the request is unknown
    std::vector<QString> row_adapters; // adapter of each row ("" = base)
};

// Everything one drain tick collected, in arrival order per kind.
struct DrainBatch {
    std::vector<TokenDelta> tokens;
    std::vector<FinishInfo> finishes;
    std::vector<StepSample> steps;
    std::vector<RetryNote> retries;   // before this batch's tokens and finishes of the same ticket
    bool empty() const { return tokens.empty() && finishes.empty() && steps.empty() && retries.empty(); }
};

// What the bridge knows about a request at submit time.
struct SubmittedRequest {
    Ticket ticket = 0;
    QString client_id;
    QString prompt;
    QString adapter;     // "" = base model
    int compare_group = 0;   // > 0: part of a side-by-side comparison
    // What a fork from this request needs to ask again (ui/requests/request_fork.h).
    GenerationParams params;
    std::vector<int64_t> input_ids;   // the request's ready ids, when it was sent as ids
    std::optional<AdapterMerge> merge;   // a blend; `adapter` then holds its merge_name
};

}  // namespace lorascope::ui

Q_DECLARE_METATYPE(lorascope::ui::DrainBatch)
Q_DECLARE_METATYPE(lorascope::ui::SubmittedRequest)
Q_DECLARE_METATYPE(lorascope::AdapterInfo)
