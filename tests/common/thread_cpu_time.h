// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID). Tests that bound the cost of some
// work bound this, never wall-clock time: a thread that waits for a core on a loaded machine
// accrues none.
#pragma once

#include <ctime>

namespace lorascope::test {

inline double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1000.0 + double(ts.tv_nsec) / 1.0e6;
}

}  // namespace lorascope::test
