// What a remote server reveals of its batching, read from its /metrics: the names LoRAX
// (router/src/{server,infer}.rs, docs/reference/metrics.md) and vLLM (vllm:*) publish, turned into
// one reading per poll, and the polls' history as an item model for the inspector's server page.
// These are server-side aggregates sampled between polls (gauges as they were at the poll,
// histogram means over the interval between two polls), never per-step engine data.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <deque>
#include <optional>

#include "remote/prometheus_text.h"

namespace lorascope::ui {

enum class ServerFlavor { Unknown, Lorax, Vllm };
QString flavorName(ServerFlavor flavor);

// One poll's values; a field is empty when the server does not publish it.
struct ServerReading {
    ServerFlavor flavor = ServerFlavor::Unknown;
    std::optional<double> batch_size;          // lorax_batch_current_size; vllm:num_requests_running
    std::optional<double> queue_length;        // lorax_queue_length; vllm:num_requests_waiting
    std::optional<double> kv_usage;            // 0..1 of the cache's capacity: vllm:kv_cache_usage_perc (or
                                               // gpu_cache_usage_perc); lorascope-cli serve's lorascope_kv_cache_usage
    std::optional<prometheus::Totals> prefill_steps, decode_steps;   // lorax_batch_inference_duration{method} (s)
    std::optional<prometheus::Totals> per_token;   // lorax_request_mean_time_per_token_duration; vllm:
                                                   // time_per_output_token_seconds / inter_token_latency_seconds (s)
    std::optional<prometheus::Totals> ttft;        // vllm:time_to_first_token_seconds (s); LoRAX has none
    std::optional<double> requests_done;       // lorax_request_success; vllm:request_success_total (all reasons)
    std::optional<double> generated_tokens;    // lorax_request_generated_tokens_sum; vllm:generation_tokens_total
    std::optional<double> steps;               // engine steps so far: lorax_batch_inference_duration_count
                                               // (all methods); vllm:iteration_tokens_total_count
};

ServerReading readServerMetrics(const prometheus::Exposition& e);

// The polls so far (bounded), one row each, and how the last poll went.
class ServerMetricsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ColTime, ColBatch, ColQueue, ColPrefillMs, ColDecodeMs, ColKvPercent, ColPerTokenMs, ColTtftMs,
                  ColRequestsPerSec, ColTokensPerSec, ColStepsPerSec, ColumnCount };
    enum class State { Stopped, Waiting, Live, Unreachable, HttpError, Unrecognised };

    // One row: gauges at the poll, and means/rates over the interval since the previous poll
    // (empty when nothing happened in between or the previous poll is missing).
    struct Point {
        double t_s = 0;   // seconds since polling started
        std::optional<double> batch, queue, prefill_ms, decode_ms, kv_percent, per_token_ms, ttft_ms,
            requests_per_s, tokens_per_s, steps_per_s;
    };

    explicit ServerMetricsModel(int capacity = 3600, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    const std::deque<Point>& points() const { return points_; }
    static std::optional<double> pointValue(const Point& p, int column);

    // A new source: history and state cleared. `url` is shown (never a token: it has none).
    void reset(const QString& url, int interval_ms);
    void stop();
    void addReading(double t_s, const ServerReading& reading);
    void setFailure(State state, const QString& message, int retry_in_ms);
    void setIntervalMs(int ms);

    State state() const { return state_; }
    QString url() const { return url_; }
    QString message() const { return message_; }   // why the last poll failed; empty when live
    int intervalMs() const { return interval_ms_; }
    int retryInMs() const { return retry_in_ms_; }
    ServerFlavor flavor() const { return last_ ? last_->flavor : ServerFlavor::Unknown; }
    int polls() const { return polls_; }
    int failures() const { return failures_; }
    double lastPollS() const { return last_t_s_; }

Q_SIGNALS:
    void pointAppended();
    void stateChanged();

private:
    std::deque<Point> points_;
    int capacity_;
    std::optional<ServerReading> last_;
    double last_t_s_ = 0, last_reading_t_s_ = 0;
    State state_ = State::Stopped;
    QString url_, message_;
    int interval_ms_ = 1000, retry_in_ms_ = 0, polls_ = 0, failures_ = 0;
};

}  // namespace lorascope::ui
