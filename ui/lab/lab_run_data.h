// One policy's run in the batching lab, as the GUI thread has received it: every engine step
// (StepStats, unchanged), and each request's life (queued, prefill, decoding, finished,
// cancelled, error) with the steps at which it was submitted, joined and left. The timeline's
// cells are read from here: cellAt(step, row) is the request the step's StepStats put in that row.
#pragma once

#include <QString>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "lorascope/bench_report.h"
#include "lorascope/engine.h"

namespace lorascope::ui {

enum class LabRequestState { Waiting, Queued, Prefill, Decoding, Finished, Cancelled, Error };
QString labStateName(LabRequestState state);

struct LabRequest {
    RequestId id = 0;               // the engine's, 0 until submitted
    QString adapter;                // "" = base
    int64_t prompt_tokens = 0;      // ids given, or the prompt's characters when it is text (until admitted)
    int64_t max_new_tokens = 0;
    double arrival_s = 0;
    LabRequestState state = LabRequestState::Waiting;
    int64_t submit_step = -1;       // steps published before it was submitted
    int64_t first_step = -1, last_step = -1;   // the steps it held a row in
    int64_t generated = 0;
    int64_t peak_kv_blocks = 0;
    double queue_ms = 0, ttft_ms = 0, total_ms = 0;
    QString error;
    uint64_t revision = 0;          // LabRunData::revision() when this request last changed
};

// Events of one run, in the order the engine produced them (see LabRunner).
struct LabEvents {
    std::vector<std::pair<size_t, RequestId>> submits;   // request index, engine id
    std::vector<StepStats> steps;
    std::vector<RequestId> tokens;                       // one entry per generated token
    std::vector<FinishEvent> finishes;
    bool empty() const { return submits.empty() && steps.empty() && tokens.empty() && finishes.empty(); }
};

class LabRunData {
public:
    // The workload's requests, in submission order, before anything runs.
    void reset(const std::vector<Request>& requests, const std::vector<double>& arrivals_s);
    void apply(const LabEvents& events);
    // The finished run's figures and the records behind them (BenchRecorder's, as `bench` has them).
    void setFigures(const BenchFigures& figures, std::vector<double> ttft_ms, std::vector<double> per_token_ms,
                    std::map<RequestId, RequestTiming> timings);
    // The figures again with other goodput targets (the engine library's compute_figures on the
    // same steps, request timings and wall time); nothing without figures.
    void recountGoodput(const LatencyTargets& targets);
    // The run was cancelled: what has not finished is cancelled (its finish events are not awaited).
    void cancelUnfinished();

    const std::vector<StepStats>& steps() const { return steps_; }
    const std::vector<LabRequest>& requests() const { return requests_; }
    int rows() const { return max_rows_; }        // the widest step so far
    // The request index in `row` at step index `step`, or -1 (no row there).
    int cellAt(int step, int row) const;
    bool joinedAt(int step, int row) const;        // the row was prefilled in that step
    int indexOf(RequestId id) const;

    bool hasFigures() const { return has_figures_; }
    const BenchFigures& figures() const { return figures_; }
    const std::vector<double>& ttftMs() const { return ttft_ms_; }
    const std::vector<double>& perTokenMs() const { return per_token_ms_; }
    const std::map<RequestId, RequestTiming>& timings() const { return timings_; }
    std::vector<double> e2eMs() const;   // submit -> last token, per request with a token
    int64_t generatedTokens() const { return generated_; }
    // Grows with every change to the requests (reset, apply, cancelUnfinished); a request whose
    // `revision` is above the one a view last saw changed since, so a view of 500 requests redraws
    // the few a tick touched (measured: a whole-table refresh per tick cost 20-30 ms of GUI time).
    uint64_t revision() const { return revision_; }
    int finishedCount() const { return finished_; }

private:
    std::vector<StepStats> steps_;
    std::vector<LabRequest> requests_;
    std::unordered_map<RequestId, int> index_of_;
    int max_rows_ = 0;
    uint64_t revision_ = 0;
    int64_t generated_ = 0;
    int finished_ = 0;
    bool has_figures_ = false;
    BenchFigures figures_;
    std::vector<double> ttft_ms_, per_token_ms_;
    std::map<RequestId, RequestTiming> timings_;
};

}  // namespace lorascope::ui
