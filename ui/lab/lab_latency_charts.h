// The lab's request-latency charts, every policy's run overlaid in its own colour (the lab's one
// key): the CDFs of end-to-end latency (arrival to last token, what a user who waits for the whole
// answer feels) and of queue time (arrival to admission), from the requests' records
// (RequestTiming, the same as `lorascope-cli bench --requests-csv`). Drawn once a policy finishes.
#pragma once

#include <QWidget>
#include <vector>

#include "common/compact_chart.h"

namespace lorascope::ui {

class LabRunData;

class LabLatencyCharts : public QWidget {
    Q_OBJECT
public:
    explicit LabLatencyCharts(QWidget* parent = nullptr);
    // runs[i] may be null (not run yet); at most as many policies as the colours the lab has.
    void refresh(const std::vector<const LabRunData*>& runs);
    QChart* chart(int i) const { return charts_.at(size_t(i)).chart; }   // 0: end-to-end, 1: queue
    int chartCount() const { return int(charts_.size()); }

private:
    std::vector<CompactChart> charts_;
};

}  // namespace lorascope::ui
