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
    // What a fork needs (requests/request_fork.h): the parameters and ready ids it was sent with,
    // and the prompt's tokens once the engine scored them (params.prompt_logprobs).
    GenerationParams params;
    std::vector<int64_t> input_ids;
    std::optional<AdapterMerge> merge;   // a blend of adapters (then `adapter` is its merge_name)
    std::vector<PromptTokenLogprob> prompt_logprobs;
    QString forked_from;             // "" or "<client id> @ token N" for a fork
    // A fork's output continues N forced tokens (its origin's before the fork, then the chosen
    // one): its token i stands at position N + i of its origin's output, and is compared there.
    int fork_offset = 0;
    int retrying = 0;                // a remote connection's retry under way (n >= 1), 0 otherwise
    QString retry_reason;            // why the last attempt failed

    bool finished() const { return status != RequestStatus::Queued && status != RequestStatus::Running; }
    // The board's Status column: "retrying (n)" while a retry is under way, else statusLabel().
    QString statusText() const;
    QString adapterLabel() const { return adapter.isEmpty() ? QStringLiteral("base") : adapter; }
    qint64 generatedTokens() const;
    // What the board's Output column shows: the text, and after it the error where there is one.
    QString outputText() const;
    // What the request's detail pane shows: the text, then the error or the other returned sequences.
    QString detailText() const;
    // The generated token whose text covers character `offset` of `text`, or -1 (past the tokens,
    // or where the final text no longer matches what streamed).
    int tokenAtTextOffset(int offset) const;
    double ttftMs() const;           // < 0 when unknown
    double tokensPerSecond() const;  // 0 when unknown
};

}  // namespace lorascope::ui
