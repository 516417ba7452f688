// Measures how long the GUI thread's event loop goes without turning: a 5 ms timer records the
// largest gap between its ticks while it runs.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QtGlobal>

namespace lorascope::test {

class EventLoopProbe {
public:
    EventLoopProbe() {
        timer_.setInterval(5);
        QObject::connect(&timer_, &QTimer::timeout, [this] {
            const qint64 now = clock_.elapsed();
            worst_ = qMax(worst_, now - last_);
            last_ = now;
        });
        clock_.start();
        timer_.start();
    }
    void stop() { timer_.stop(); }
    qint64 worst_gap_ms() const { return worst_; }
    qint64 elapsed_ms() const { return clock_.elapsed(); }

private:
    QElapsedTimer clock_;
    QTimer timer_;
    qint64 last_ = 0, worst_ = 0;
};

}  // namespace lorascope::test
