#include "ops/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lorascope::ops {

namespace {

thread_local bool t_in_region = false;

std::atomic<ParallelDelegate> g_delegate{nullptr};

// Marks the running thread as inside a region for one chunk (nested parallel_for runs serially).
class RegionScope {
public:
    RegionScope() : outer_(t_in_region) { t_in_region = true; }
    ~RegionScope() { t_in_region = outer_; }
    RegionScope(const RegionScope&) = delete;
    RegionScope& operator=(const RegionScope&) = delete;

private:
    bool outer_;
};

inline void relax() {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

using Clock = std::chrono::steady_clock;

// Spinning keeps a worker ready for the next product of a decoding step (products follow each
// other every few microseconds); sleeping hands the core back when the step is over or when a
// neighbour wants it. Measured on the 2-core machine (docs/benchmarks.md, issue 28).
constexpr int64_t kDefaultSpinUs = 100;

int64_t read_spin_us() {
    const char* v = std::getenv("LORASCOPE_POOL_SPIN_US");
    if (!v || !*v) return kDefaultSpinUs;
    char* end = nullptr;
    const long long us = std::strtoll(v, &end, 10);
    return end && *end == '\0' && us >= 0 ? us : kDefaultSpinUs;
}

// One parallel_for. Workers hold it by shared_ptr, so a worker that wakes late finds every chunk
// claimed and lets go, without touching the caller's (by then gone) function.
struct Job {
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    int64_t begin = 0, end = 0, chunk = 1, chunks = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex error_mutex;
    std::exception_ptr error;

    // Claims and runs chunks until none is left.
    void work() {
        for (;;) {
            const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= chunks) return;
            const int64_t b = begin + c * chunk, e = std::min(end, b + chunk);
            try {
                (*fn)(b, e);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
            }
            done.fetch_add(1, std::memory_order_acq_rel);
        }
    }
};

class Pool {
public:
    Pool() { resize(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))); }
    ~Pool() { stop_workers(); }

    int threads() const { return threads_; }

    void resize(int n, void (*init)() = nullptr) {
        n = std::max(1, n);
        std::lock_guard<std::mutex> lock(submit_);
        if (n == threads_ && !init) return;
        stop_workers();
        if (init) init_ = init;  // after the join: a worker that was only starting reads it
        threads_ = n;
        stop_ = false;
        // Each worker starts from the generation of its creation, not of its first instruction: a
        // worker the OS starts late (CI, under load) would otherwise skip the jobs submitted
        // meanwhile, and a job that waits for a second thread (test_thread_pool) would wait forever.
        const uint64_t born = generation_.load(std::memory_order_acquire);
        for (int i = 1; i < n; ++i) workers_.emplace_back([this, born] { worker(born); });
    }

    // False when another thread's job is running (the caller then runs its range alone).
    bool run(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
        std::unique_lock<std::mutex> lock(submit_, std::try_to_lock);
        if (!lock.owns_lock()) return false;
        auto job = std::make_shared<Job>();
        job->fn = &fn;
        job->begin = begin;
        job->end = end;
        // About four chunks a thread: enough for the others to take over a descheduled thread's
        // share, few enough that claiming costs nothing beside the work.
        const int64_t range = end - begin;
        job->chunk = std::max(grain, (range + 4 * threads_ - 1) / (4 * threads_));
        job->chunks = (range + job->chunk - 1) / job->chunk;
        {
            std::lock_guard<std::mutex> guard(job_mutex_);
            job_ = job;
        }
        generation_.fetch_add(1, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) {
            { std::lock_guard<std::mutex> guard(sleep_mutex_); }
            wake_.notify_all();
        }
        t_in_region = true;
        job->work();
        t_in_region = false;
        wait_done(*job);
        if (job->error) std::rethrow_exception(job->error);
        return true;
    }

private:
    void wait_done(const Job& job) const {
        const auto deadline = Clock::now() + std::chrono::microseconds(spin_us_);
        for (int64_t i = 0; job.done.load(std::memory_order_acquire) < job.chunks; ++i) {
            if ((i & 63) != 63 || Clock::now() < deadline) relax();
            else std::this_thread::yield();  // a worker holding a chunk may be waiting for this core
        }
    }

    // Waits for a job newer than `seen`: spins up to spin_us_, yielding the core every ~64 pauses
    // (another runnable thread on it, an OpenMP worker of ATen or oneDNN or a neighbour's, runs
    // then), then sleeps. False: stop.
    bool wait_job(uint64_t seen) {
        const auto deadline = Clock::now() + std::chrono::microseconds(spin_us_);
        for (int64_t i = 0; generation_.load(std::memory_order_acquire) == seen; ++i) {
            if (stop_.load(std::memory_order_relaxed)) return false;
            relax();
            if ((i & 63) != 63) continue;
            if (Clock::now() < deadline) {
                std::this_thread::yield();
                continue;
            }
            std::unique_lock<std::mutex> lock(sleep_mutex_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen || stop_.load(); });
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
        }
        return !stop_.load(std::memory_order_relaxed);
    }

    void worker(uint64_t seen) {
        if (init_) init_();
        while (wait_job(seen)) {
            seen = generation_.load(std::memory_order_acquire);
            std::shared_ptr<Job> job;
            {
                std::lock_guard<std::mutex> guard(job_mutex_);
                job = job_;
            }
            if (!job) continue;
            t_in_region = true;
            job->work();
            t_in_region = false;
        }
    }

    void stop_workers() {
        {
            std::lock_guard<std::mutex> guard(sleep_mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& w : workers_) w.join();
        workers_.clear();
    }

    const int64_t spin_us_ = read_spin_us();
    int threads_ = 0;
    void (*init_)() = nullptr;
    std::mutex submit_;  // one job at a time
    std::mutex job_mutex_;
    std::shared_ptr<Job> job_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<bool> stop_{false};
    std::atomic<int> sleepers_{0};
    std::mutex sleep_mutex_;
    std::condition_variable wake_;
    std::vector<std::thread> workers_;
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (end <= begin) return;
    grain = std::max<int64_t>(grain, 1);
    const ParallelDelegate delegate = g_delegate.load(std::memory_order_acquire);
    if (delegate && end - begin > grain && !t_in_region) {
        delegate(begin, end, grain, [&fn](int64_t b, int64_t e) {
            RegionScope scope;
            fn(b, e);
        });
        return;
    }
    if (end - begin <= grain || t_in_region || pool().threads() == 1 || !pool().run(begin, end, grain, fn)) {
        RegionScope scope;
        fn(begin, end);
    }
}

void set_parallel_delegate(ParallelDelegate delegate) { g_delegate.store(delegate, std::memory_order_release); }

void set_pool_threads(int n) { pool().resize(n); }
void set_pool_worker_init(void (*init)()) { pool().resize(pool().threads(), init); }
int pool_threads() { return pool().threads(); }
int64_t pool_spin_us() { return read_spin_us(); }
bool in_parallel_region() { return t_in_region; }

}  // namespace lorascope::ops
