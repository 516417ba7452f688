// One request as the window knows it: what was asked, what streamed back, how fast.
#pragma once

#include <QElapsedTimer>
#include <QString>
#include <vector>

#include "engine_link/bridge_events.h"

namespace lorascope::ui {

enum class RequestStatus { Queued, Running, Finished, Cancelled, Failed };
QString statusLabel(RequestStatus status);
QString finishReasonLabel(FinishReason reason);

struct StreamedToken {
    int64_t token_id = 0;
    QString text;
    float logprob = 0.0f;
    bool special = false;
};

struct RequestRecord {
    Ticket ticket = 0;
    QString client_id;
    QString prompt;
    QString adapter;                 // "" = base model
    int compare_group = 0;
    RequestStatus status = RequestStatus::Queued;
    QString text;                    // streamed so far; the engine's full text once finished
    std::vector<StreamedToken> tokens;
    QString finish_reason;           // empty while running
    QString error;
    QElapsedTimer since_submit;
    qint64 first_token_ms = -1;      // GUI-side arrival, replaced by the engine's usage at finish
    qint64 last_token_ms = -1;
    bool have_usage = false;
    Usage usage;
    std::vector<ReturnedSequence> sequences;   // num_return_sequences > 1: all, best first

    bool finished() const { return status != RequestStatus::Queued && status != RequestStatus::Running; }
    QString adapterLabel() const { return adapter.isEmpty() ? QStringLiteral("base") : adapter; }
    qint64 generatedTokens() const { return have_usage ? usage.generated_tokens : qint64(tokens.size()); }
    // What the request's detail pane shows: the text (or the error), then the other returned sequences.
    QString detailText() const;
    double ttftMs() const;           // < 0 when unknown
    double tokensPerSecond() const;  // 0 when unknown
};

}  // namespace lorascope::ui
