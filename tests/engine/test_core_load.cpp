// The engine's view of a busy machine (util/core_load.h) on synthetic /proc text and loads, no
// clocks: /proc/stat and /proc/self/stat parse as Linux writes them, the neighbours' share is the
// busy time that is not ours, and the thread count follows the cores left, only after two readings
// agree, within [1, --threads].
#include <QtTest>

#include "util/core_load.h"

using namespace lorascope::util;

namespace {

// Two cores; fields: user nice system idle iowait irq softirq steal guest guest_nice.
std::string stat_text(int64_t busy0, int64_t idle0, int64_t busy1, int64_t idle1, int64_t steal1 = 0) {
    auto line = [](int cpu, int64_t busy, int64_t idle, int64_t steal) {
        return "cpu" + std::to_string(cpu) + " " + std::to_string(busy - 10) + " 4 6 " + std::to_string(idle) +
               " 3 0 0 " + std::to_string(steal) + " 0 0\n";
    };
    return "cpu  1 2 3 4 5 6 7 8 9 10\n" + line(0, busy0, idle0, 0) + line(1, busy1, idle1, steal1) +
           "intr 12345 0 0\nctxt 999\nbtime 1700000000\n";
}

}  // namespace

class TestCoreLoad : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesProcStatPerCore() {
        const CpuTicks all = parse_proc_stat(stat_text(100, 50, 200, 70, 5), {});
        QCOMPARE(all.cores, 2);
        QCOMPARE(all.busy, int64_t{100 + 200 + 5});           // steal counts as busy
        QCOMPARE(all.total, int64_t{100 + 50 + 3 + 200 + 70 + 3 + 5});
        const CpuTicks one = parse_proc_stat(stat_text(100, 50, 200, 70), {1});  // affinity: core 1 only
        QCOMPARE(one.cores, 1);
        QCOMPARE(one.busy, int64_t{200});
        QCOMPARE(parse_proc_stat("garbage\ncpu\ncpuX 1 2 3\n", {}).cores, 0);
    }

    void parsesSelfStatWithSpacesInTheName() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
        const std::string text = "4242 (lorascope cli) R 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0 3\n";
        QCOMPARE(parse_self_ticks(text), int64_t{175});
        QCOMPARE(parse_self_ticks("4242 (x) R 1 2"), int64_t{-1});
        QCOMPARE(parse_self_ticks("no parenthesis"), int64_t{-1});
    }

    void othersAreTheBusyTimeThatIsNotOurs() {
        // 2 cores over 100 jiffies each: 200 total; 150 busy of which 60 ours -> 90 others = 0.9 core.
        const CpuTicks before{1000, 4000, 2}, after{1150, 4200, 2};
        const auto others = others_busy_cores(before, after, 500, 560);
        QVERIFY(others.has_value());
        QVERIFY(std::abs(*others - 0.9) < 1e-9);
        // Ours counted above what the cores show (rounding of jiffies): never below 0.
        QCOMPARE(*others_busy_cores(before, after, 0, 400), 0.0);
        QVERIFY(!others_busy_cores(before, before, 0, 0).has_value());
    }

    void governorFollowsTheCoresLeftAfterTwoReadings() {
        ThreadGovernor g(2, 2);
        QCOMPARE(g.threads(), 2);
        QCOMPARE(g.update(1.0), 2);  // one reading is not enough
        QCOMPARE(g.update(1.0), 1);  // two agree: one core left
        QCOMPARE(g.update(0.1), 1);
        QCOMPARE(g.update(1.0), 1);  // the burst of quiet was one reading: the count stays
        QCOMPARE(g.update(0.0), 1);
        QCOMPARE(g.update(0.2), 2);  // neighbour gone
        QCOMPARE(g.update(0.4), 2);  // less than half a core: still two
        QCOMPARE(g.update(0.6), 2);
        QCOMPARE(g.update(0.6), 1);  // half a core or more takes one
        QCOMPARE(g.update(5.0), 1);  // never below 1
        ThreadGovernor many(4, 8);   // --threads 4 on 8 cores: at most 4, whatever is free
        QCOMPARE(many.update(0.0), 4);
        QCOMPARE(many.update(5.0), 4);
        QCOMPARE(many.update(5.0), 3);
    }

    void monitorReadsThisMachine() {
#if defined(__linux__)
        CoreLoadMonitor monitor(0);
        QVERIFY(monitor.available());
        QVERIFY(monitor.cores() >= 1);
        // Busy-wait on this thread for a few jiffies so that a reading has time in it; ours is then
        // subtracted, so the neighbours' share is a number between 0 and the cores.
        std::optional<double> others;
        for (int i = 0; i < 2000 && !others; ++i) {
            volatile double x = 0;
            for (int k = 0; k < 200000; ++k) x = x + k;
            others = monitor.poll();
        }
        QVERIFY(others.has_value());
        QVERIFY(*others >= 0 && *others <= monitor.cores());
#else
        QSKIP("/proc is Linux's");
#endif
    }
};

QTEST_APPLESS_MAIN(TestCoreLoad)
#include "test_core_load.moc"
