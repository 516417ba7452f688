// How many cores other programs keep busy, and how many compute threads that leaves the engine.
//
// Why: the engine's steps are made of many short parallel regions (ATen's and oneDNN's OpenMP ones
// and our pool's), each ending when its slowest thread does. Beside a program that keeps one of two
// cores busy, one of our two threads is descheduled for a time slice at a time and every region
// waits for it: W1 fell to 0.28x of its quiet speed (docs/benchmarks.md, issue 28), where one
// thread on the free core would keep about half. So the engine watches the machine between steps
// (Linux: /proc/stat for all busy time, /proc/self/stat for ours; their difference is the
// neighbours') and computes on the cores that are left: `--threads` is the most it uses.
//
// The parsing and the policy are pure functions of their input (tested with synthetic /proc text
// and loads); CoreLoadMonitor is the thin part that reads the files. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lorascope::util {

// Jiffies summed over the cores in `cpus` (/proc/stat's "cpuN" lines; all of them when `cpus` is
// empty): busy = user + nice + system + irq + softirq + steal (a hypervisor's theft is a
// neighbour too), total = busy + idle + iowait. Lines that do not parse are skipped.
struct CpuTicks {
    int64_t busy = 0;
    int64_t total = 0;
    int cores = 0;
};
CpuTicks parse_proc_stat(const std::string& text, const std::vector<int>& cpus);

// utime + stime of /proc/self/stat (fields 14 and 15, after the parenthesised name, which may hold
// spaces); -1 when it does not parse.
int64_t parse_self_ticks(const std::string& text);

// Cores kept busy by others between two readings: (busy - ours) / (total / cores), at least 0;
// nullopt when no time passed.
std::optional<double> others_busy_cores(const CpuTicks& before, const CpuTicks& after, int64_t self_before,
                                        int64_t self_after);

// The thread count for a load: the cores left, rounded to the nearest (a neighbour at half a core
// or more takes one), within [1, max_threads]. A change takes two readings in a row that agree
// with it, so one burst does not move the count.
class ThreadGovernor {
public:
    ThreadGovernor(int max_threads, int cores);
    // The count after one more reading.
    int update(double others_busy);
    int threads() const { return threads_; }

private:
    int max_, cores_, threads_, pending_ = 0, pending_count_ = 0;
};

// Reads /proc between steps, at most every `period_ms` (a reading over a shorter span is a few
// jiffies, too coarse to tell half a core). Gives nothing where /proc is missing (not Linux).
class CoreLoadMonitor {
public:
    explicit CoreLoadMonitor(double period_ms = 250);
    // The neighbours' busy cores since the last reading, when `period_ms` has passed.
    std::optional<double> poll();
    int cores() const { return cores_; }
    bool available() const { return available_; }

private:
    bool read(CpuTicks& cpu, int64_t& self) const;

    double period_ms_;
    std::vector<int> cpus_;  // the cores this process may run on
    int cores_ = 0;
    bool available_ = false;
    CpuTicks last_cpu_;
    int64_t last_self_ = 0;
    int64_t last_ms_ = 0;
};

}  // namespace lorascope::util
