#include "remote/server_metrics.h"

#include <cmath>

namespace lorascope::ui {

namespace {

using prometheus::Exposition;
using prometheus::Totals;

std::optional<double> finite(std::optional<double> v) {
    if (v && !std::isfinite(*v)) return std::nullopt;
    return v;
}

std::optional<double> first_of(const Exposition& e, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (auto v = finite(e.sum(n))) return v;
    return std::nullopt;
}

std::optional<Totals> first_totals(const Exposition& e, std::initializer_list<const char*> names,
                                   const prometheus::Labels& match = {}) {
    for (const char* n : names)
        if (auto t = e.totals(n, match)) return t;
    return std::nullopt;
}

// The mean of a histogram (or summary) over the observations between two polls, in ms; empty
// when none was made or the server restarted (its counters went back).
std::optional<double> mean_ms(const std::optional<Totals>& before, const std::optional<Totals>& now) {
    if (!before || !now || now->count <= before->count) return std::nullopt;
    const double v = 1000.0 * (now->sum - before->sum) / (now->count - before->count);
    return std::isfinite(v) && v >= 0 ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> rate(const std::optional<double>& before, const std::optional<double>& now, double dt_s) {
    if (!before || !now || dt_s <= 0 || *now < *before) return std::nullopt;
    return (*now - *before) / dt_s;
}

}  // namespace

QString flavorName(ServerFlavor flavor) {
    switch (flavor) {
    case ServerFlavor::Lorax: return QStringLiteral("LoRAX");
    case ServerFlavor::Vllm: return QStringLiteral("vLLM");
    case ServerFlavor::Unknown: break;
    }
    return QStringLiteral("unrecognised");
}

ServerReading readServerMetrics(const Exposition& e) {
    ServerReading r;
    if (e.hasPrefix("lorax_")) {
        r.flavor = ServerFlavor::Lorax;
        r.batch_size = finite(e.sum("lorax_batch_current_size"));
        r.queue_length = finite(e.sum("lorax_queue_length"));
        r.prefill_steps = e.totals("lorax_batch_inference_duration", {{"method", "prefill"}});
        r.decode_steps = e.totals("lorax_batch_inference_duration", {{"method", "decode"}});
        r.per_token = e.totals("lorax_request_mean_time_per_token_duration");
        r.requests_done = finite(e.sum("lorax_request_success"));
        r.generated_tokens = finite(e.sum("lorax_request_generated_tokens_sum"));
        r.steps = finite(e.sum("lorax_batch_inference_duration_count"));
        // lorascope-cli serve's own addition (LoRAX has no KV-cache gauge), a fraction like vLLM's.
        r.kv_usage = finite(e.sum("lorascope_kv_cache_usage"));
    } else if (e.hasPrefix("vllm:")) {
        r.flavor = ServerFlavor::Vllm;
        r.batch_size = finite(e.sum("vllm:num_requests_running"));
        r.queue_length = finite(e.sum("vllm:num_requests_waiting"));
        // Older releases call it gpu_cache_usage_perc; both are fractions (0..1) despite the name.
        r.kv_usage = finite(e.max("vllm:kv_cache_usage_perc"));
        if (!r.kv_usage) r.kv_usage = finite(e.max("vllm:gpu_cache_usage_perc"));
        r.per_token = first_totals(e, {"vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds"});
        r.ttft = e.totals("vllm:time_to_first_token_seconds");
        r.requests_done = first_of(e, {"vllm:request_success_total", "vllm:request_success"});
        r.generated_tokens = first_of(e, {"vllm:generation_tokens_total", "vllm:generation_tokens"});
        r.steps = finite(e.sum("vllm:iteration_tokens_total_count"));
    }
    return r;
}

ServerMetricsModel::ServerMetricsModel(int capacity, QObject* parent)
    : QAbstractTableModel(parent), capacity_(qMax(2, capacity)) {}

int ServerMetricsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(points_.size()); }
int ServerMetricsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

std::optional<double> ServerMetricsModel::pointValue(const Point& p, int column) {
    switch (column) {
    case ColTime: return p.t_s;
    case ColBatch: return p.batch;
    case ColQueue: return p.queue;
    case ColPrefillMs: return p.prefill_ms;
    case ColDecodeMs: return p.decode_ms;
    case ColKvPercent: return p.kv_percent;
    case ColPerTokenMs: return p.per_token_ms;
    case ColTtftMs: return p.ttft_ms;
    case ColRequestsPerSec: return p.requests_per_s;
    case ColTokensPerSec: return p.tokens_per_s;
    case ColStepsPerSec: return p.steps_per_s;
    default: return std::nullopt;
    }
}

QVariant ServerMetricsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole) return {};
    const auto v = pointValue(points_[size_t(index.row())], index.column());
    if (!v) return QStringLiteral("–");
    const int decimals = index.column() == ColBatch || index.column() == ColQueue ? 0 : index.column() == ColTime ? 1 : 2;
    return QString::number(*v, 'f', decimals);
}

QVariant ServerMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ColTime: return tr("Poll at s");
    case ColBatch: return tr("Batch size");
    case ColQueue: return tr("Queue");
    case ColPrefillMs: return tr("Prefill ms (mean)");
    case ColDecodeMs: return tr("Decode ms (mean)");
    case ColKvPercent: return tr("KV cache %");
    case ColPerTokenMs: return tr("Per token ms (mean)");
    case ColTtftMs: return tr("TTFT ms (mean)");
    case ColRequestsPerSec: return tr("Requests/s done");
    case ColTokensPerSec: return tr("Tokens/s (finished)");
    case ColStepsPerSec: return tr("Steps/s");
    default: return {};
    }
}

void ServerMetricsModel::reset(const QString& url, int interval_ms) {
    beginResetModel();
    points_.clear();
    endResetModel();
    last_.reset();
    last_t_s_ = 0;
    url_ = url;
    interval_ms_ = interval_ms;
    polls_ = failures_ = retry_in_ms_ = 0;
    message_.clear();
    state_ = State::Waiting;
    Q_EMIT stateChanged();
}

void ServerMetricsModel::stop() {
    state_ = State::Stopped;
    message_.clear();
    Q_EMIT stateChanged();
}

void ServerMetricsModel::setIntervalMs(int ms) {
    interval_ms_ = ms;
    Q_EMIT stateChanged();
}

void ServerMetricsModel::addReading(double t_s, const ServerReading& r) {
    ++polls_;
    last_t_s_ = t_s;
    retry_in_ms_ = 0;
    if (r.flavor == ServerFlavor::Unknown) {
        ++failures_;
        state_ = State::Unrecognised;
        message_ = tr("the answer has no LoRAX (lorax_*) or vLLM (vllm:*) metrics");
        last_.reset();
        Q_EMIT stateChanged();
        return;
    }
    Point p;
    p.t_s = t_s;
    p.batch = r.batch_size;
    p.queue = r.queue_length;
    if (r.kv_usage) p.kv_percent = 100.0 * *r.kv_usage;
    if (last_ && last_->flavor == r.flavor) {
        const double dt = t_s - last_reading_t_s_;
        p.prefill_ms = mean_ms(last_->prefill_steps, r.prefill_steps);
        p.decode_ms = mean_ms(last_->decode_steps, r.decode_steps);
        p.per_token_ms = mean_ms(last_->per_token, r.per_token);
        p.ttft_ms = mean_ms(last_->ttft, r.ttft);
        p.requests_per_s = rate(last_->requests_done, r.requests_done, dt);
        p.tokens_per_s = rate(last_->generated_tokens, r.generated_tokens, dt);
        p.steps_per_s = rate(last_->steps, r.steps, dt);
    }
    last_ = r;
    last_reading_t_s_ = t_s;
    if (int(points_.size()) >= capacity_) {
        beginRemoveRows({}, 0, 0);
        points_.pop_front();
        endRemoveRows();
    }
    const int row = int(points_.size());
    beginInsertRows({}, row, row);
    points_.push_back(p);
    endInsertRows();
    const bool changed = state_ != State::Live;
    state_ = State::Live;
    message_.clear();
    if (changed) Q_EMIT stateChanged();
    Q_EMIT pointAppended();
}

void ServerMetricsModel::setFailure(State state, const QString& message, int retry_in_ms) {
    ++failures_;
    state_ = state;
    message_ = message;
    retry_in_ms_ = retry_in_ms;
    // The interval after a failed poll has no previous reading to take differences from.
    last_.reset();
    Q_EMIT stateChanged();
}

}  // namespace lorascope::ui
