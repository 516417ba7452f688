// Measures how much work the GUI thread does without letting its event loop turn: a 5 ms timer
// records, between each two of its ticks, the CPU time the thread spent (CLOCK_THREAD_CPUTIME_ID).
// A long stretch of work on the GUI thread (a model reset of 1,000 rows, a synchronous wait) shows
// as one large busy gap. Unlike the wall-clock gap between ticks, the CPU gap does not grow when
// the machine is loaded and the thread merely waits for a core (a 100 ms wall-clock bound failed
// at 157 and 209 ms that way), so tests may assert on it. The wall-clock gap is kept for the log.
// What it cannot see: the GUI thread blocked in a wait (a join, a lock) accrues no CPU time either;
// tests of teardown and waiting check that the wait returns at all.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QtGlobal>

#include "thread_cpu_time.h"

namespace lorascope::test {

class EventLoopProbe {
public:
    EventLoopProbe() {
        timer_.setInterval(5);
        QObject::connect(&timer_, &QTimer::timeout, [this] {
            const qint64 now = clock_.elapsed();
            const double cpu = thread_cpu_ms();
            worst_wall_ = qMax(worst_wall_, now - last_);
            worst_busy_ms_ = qMax(worst_busy_ms_, cpu - last_cpu_ms_);
            last_ = now;
            last_cpu_ms_ = cpu;
            ++ticks_;
        });
        clock_.start();
        last_cpu_ms_ = thread_cpu_ms();
        timer_.start();
    }
    void stop() { timer_.stop(); }
    // The most CPU time the GUI thread spent between two ticks, in ms.
    double worst_busy_ms() const { return worst_busy_ms_; }
    qint64 ticks() const { return ticks_; }
    qint64 worst_wall_gap_ms() const { return worst_wall_; }   // for the log only: it grows with load
    qint64 elapsed_ms() const { return clock_.elapsed(); }

private:
    QElapsedTimer clock_;
    QTimer timer_;
    qint64 last_ = 0, worst_wall_ = 0, ticks_ = 0;
    double last_cpu_ms_ = 0, worst_busy_ms_ = 0;
};

}  // namespace lorascope::test
