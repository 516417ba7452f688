#include "engine/compute_threads.h"

#include <ATen/Parallel.h>

#include "lorascope/runtime.h"
#include "ops/thread_pool.h"

namespace lorascope::engine_detail {

ComputeThreads::ComputeThreads(int requested, bool adaptive, bool products_on_pool) {
    set_compute_threads(requested);
    threads_ = ops::pool_threads();  // `requested`, or all cores
    if (products_on_pool) at::set_num_threads(1);
    if (!adaptive || threads_ < 2) return;
    monitor_.emplace();
    if (!monitor_->available()) {
        monitor_.reset();
        return;
    }
    governor_.emplace(threads_, monitor_->cores());
}

int ComputeThreads::before_step() {
    if (!monitor_) return threads_;
    const auto others = monitor_->poll();
    if (!others) return threads_;
    const int n = governor_->update(*others);
    if (n != threads_) {
        ops::set_pool_threads(n);
        threads_ = n;
    }
    return threads_;
}

}  // namespace lorascope::engine_detail
