#include "util/core_load.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#if defined(__linux__)
#include <sched.h>
#endif

namespace lorascope::util {

CpuTicks parse_proc_stat(const std::string& text, const std::vector<int>& cpus) {
    CpuTicks out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') continue;
        std::istringstream fields(line.substr(3));
        int cpu = -1;
        int64_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // user nice system idle iowait irq softirq steal
        if (!(fields >> cpu)) continue;
        int n = 0;
        while (n < 8 && fields >> v[n]) ++n;
        if (n < 4) continue;
        if (!cpus.empty() && std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
        const int64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        out.busy += busy;
        out.total += busy + v[3] + v[4];
        ++out.cores;
    }
    return out;
}

int64_t parse_self_ticks(const std::string& text) {
    const auto close = text.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream fields(text.substr(close + 1));
    // After the name: state (field 3) ... utime is field 14, stime 15.
    std::string field;
    int64_t utime = 0, stime = 0;
    for (int i = 3; i <= 15; ++i) {
        if (!(fields >> field)) return -1;
        if (i == 14 || i == 15) {
            char* end = nullptr;
            const long long v = std::strtoll(field.c_str(), &end, 10);
            if (!end || *end != '\0' || v < 0) return -1;
            (i == 14 ? utime : stime) = v;
        }
    }
    return utime + stime;
}

std::optional<double> others_busy_cores(const CpuTicks& before, const CpuTicks& after, int64_t self_before,
                                        int64_t self_after) {
    const int64_t total = after.total - before.total;
    if (total <= 0 || after.cores <= 0) return std::nullopt;
    const double per_core = static_cast<double>(total) / after.cores;
    const double others = static_cast<double>((after.busy - before.busy) - (self_after - self_before));
    return std::max(0.0, others / per_core);
}

ThreadGovernor::ThreadGovernor(int max_threads, int cores)
    : max_(std::max(1, max_threads)), cores_(std::max(1, cores)), threads_(max_) {}

int ThreadGovernor::update(double others_busy) {
    const double left = static_cast<double>(cores_) - std::max(0.0, others_busy);
    const int want = std::clamp(static_cast<int>(std::floor(left + 0.5)), 1, max_);
    if (want == threads_) {
        pending_count_ = 0;
        return threads_;
    }
    if (want != pending_) {
        pending_ = want;
        pending_count_ = 0;
    }
    if (++pending_count_ >= 2) {
        threads_ = want;
        pending_count_ = 0;
    }
    return threads_;
}

namespace {

std::string slurp(const char* path) {
    std::ifstream in(path);
    if (!in) return {};
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

CoreLoadMonitor::CoreLoadMonitor(double period_ms) : period_ms_(period_ms) {
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus_.push_back(c);
#endif
    available_ = read(last_cpu_, last_self_) && last_cpu_.cores > 0;
    cores_ = last_cpu_.cores;
    last_ms_ = now_ms();
}

bool CoreLoadMonitor::read(CpuTicks& cpu, int64_t& self) const {
    const std::string stat = slurp("/proc/stat");
    if (stat.empty()) return false;
    cpu = parse_proc_stat(stat, cpus_);
    self = parse_self_ticks(slurp("/proc/self/stat"));
    return self >= 0;
}

std::optional<double> CoreLoadMonitor::poll() {
    if (!available_) return std::nullopt;
    const int64_t now = now_ms();
    if (static_cast<double>(now - last_ms_) < period_ms_) return std::nullopt;
    CpuTicks cpu;
    int64_t self = 0;
    if (!read(cpu, self)) return std::nullopt;
    const auto others = others_busy_cores(last_cpu_, cpu, last_self_, self);
    last_cpu_ = cpu;
    last_self_ = self;
    last_ms_ = now;
    return others;
}

}  // namespace lorascope::util
