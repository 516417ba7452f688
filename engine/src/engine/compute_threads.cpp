#include "engine/compute_threads.h"

#include <ATen/Parallel.h>

#include "lorascope/runtime.h"
#include "ops/thread_pool.h"

namespace lorascope::engine_detail {

ComputeThreads::ComputeThreads(int requested, bool adaptive, bool products_on_pool) {
    set_compute_threads(requested);
    threads_ = ops::pool_threads();  // `requested`, or all cores
    // One runtime for all the compute threads (ops/thread_pool.h, set_parallel_delegate): ours where
    // the products run on our kernels (ATen's own operators get one thread), ATen's team otherwise.
    if (products_on_pool) {
        at::set_num_threads(1);
        ops::set_parallel_delegate(nullptr);
    } else {
        ops::set_parallel_delegate([](int64_t begin, int64_t end, int64_t grain,
                                      const std::function<void(int64_t, int64_t)>& fn) {
            at::parallel_for(begin, end, grain, fn);
        });
    }
    if (!adaptive || threads_ < 2 || !products_on_pool) return;  // ATen's count is fixed: see the header
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
