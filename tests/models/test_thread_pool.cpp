// The kernels' thread pool (ops/thread_pool.h): every index once, in chunks of at least the grain;
// the work shared between threads; nested calls serial; an exception reaches the caller and the pool
// goes on; two callers at once both get their work done; the thread count and the worker set-up;
// a delegate (another runtime's loop) takes the loops while it is set.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ops/thread_pool.h"

using lorascope::ops::parallel_for;

namespace {
std::atomic<int> g_inits{0};

// The threads that ran a parallel_for of `n` chunks whose first chunks each wait (up to a minute,
// for a busy machine) until a second thread has joined.
std::set<std::thread::id> threads_that_ran(int64_t n) {
    std::mutex m;
    std::condition_variable joined;
    std::set<std::thread::id> threads;
    parallel_for(0, n, 1, [&](int64_t, int64_t) {
        std::unique_lock<std::mutex> lock(m);
        threads.insert(std::this_thread::get_id());
        joined.notify_all();
        joined.wait_for(lock, std::chrono::seconds(60), [&] { return threads.size() >= 2; });
    });
    return threads;
}
}  // namespace

class TestThreadPool : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { lorascope::ops::set_pool_threads(2); }

    void every_index_once() {
        for (int64_t end : {1, 7, 1000, 100000})
            for (int64_t grain : {1, 3, 1000}) {
                std::vector<std::atomic<int>> seen(static_cast<size_t>(end + 5));
                std::atomic<int64_t> short_chunks{0};
                parallel_for(5, end + 5, grain, [&](int64_t b, int64_t e) {
                    if (e - b < grain && e != end + 5) ++short_chunks;  // only the last chunk may be short
                    for (int64_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i)];
                });
                for (int64_t i = 0; i < end + 5; ++i) QCOMPARE(seen[static_cast<size_t>(i)].load(), i < 5 ? 0 : 1);
                QCOMPARE(short_chunks.load(), int64_t{0});
            }
        int calls = 0;
        parallel_for(3, 3, 1, [&](int64_t, int64_t) { ++calls; });
        QCOMPARE(calls, 0);
    }

    // The first chunk waits (up to a minute, for a busy machine) until another thread runs one:
    // a worker that never took work would leave every chunk to the caller.
    void the_work_is_shared() { QCOMPARE(threads_that_ran(64).size(), size_t{2}); }

    void nested_calls_run_on_the_calling_thread() {
        std::atomic<bool> nested_elsewhere{false}, outside{false};
        parallel_for(0, 16, 1, [&](int64_t, int64_t) {
            if (!lorascope::ops::in_parallel_region()) outside = true;
            const auto me = std::this_thread::get_id();
            parallel_for(0, 100, 1, [&](int64_t, int64_t) {
                if (std::this_thread::get_id() != me) nested_elsewhere = true;
            });
        });
        QVERIFY(!nested_elsewhere.load());
        QVERIFY(!outside.load());
        QVERIFY(!lorascope::ops::in_parallel_region());
    }

    void an_exception_reaches_the_caller() {
        std::atomic<int64_t> done{0};
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
                                     if (b <= 37 && 37 < e) throw std::runtime_error("chunk 37");
                                     done += e - b;
                                 }));
        QVERIFY(done.load() < 100);
        int64_t sum = 0;
        std::mutex m;
        parallel_for(0, 100, 1, [&](int64_t b, int64_t e) {
            std::lock_guard<std::mutex> lock(m);
            for (int64_t i = b; i < e; ++i) sum += i;
        });
        QCOMPARE(sum, int64_t{4950});
    }

    // A second caller while the pool is busy runs its range itself; both finish, both right.
    void two_callers_at_once() {
        auto caller = [](int64_t* out) {
            for (int rep = 0; rep < 200; ++rep) {
                std::atomic<int64_t> sum{0};
                parallel_for(0, 1000, 10, [&](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i) sum += i;
                });
                if (sum.load() != 499500) return;
                ++*out;
            }
        };
        int64_t a = 0, b = 0;
        std::thread other(caller, &b);
        caller(&a);
        other.join();
        QCOMPARE(a, int64_t{200});
        QCOMPARE(b, int64_t{200});
    }

    void thread_count_and_worker_setup() {
        lorascope::ops::set_pool_threads(1);
        QCOMPARE(lorascope::ops::pool_threads(), 1);
        std::set<std::thread::id> threads;
        parallel_for(0, 64, 1, [&](int64_t, int64_t) { threads.insert(std::this_thread::get_id()); });
        QCOMPARE(threads.size(), size_t{1});
        QVERIFY(*threads.begin() == std::this_thread::get_id());
        lorascope::ops::set_pool_threads(3);
        g_inits = 0;
        lorascope::ops::set_pool_worker_init([] { ++g_inits; });
        // Workers start (and run the set-up) on their own time: wait for it by handing out work.
        for (int i = 0; i < 60000 && g_inits.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        QCOMPARE(g_inits.load(), 2);  // the two workers; the caller is not one
        lorascope::ops::set_pool_threads(2);
    }

    // A worker the OS starts late (here: its set-up sleeps) still takes the job submitted while it
    // was starting. It used to read the job counter when it first ran, skip that job, and leave a
    // job that waits for a second thread waiting forever (CI, test_thread_pool, under load).
    void a_worker_that_starts_late_takes_the_next_job() {
        g_inits = 0;
        lorascope::ops::set_pool_worker_init([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            ++g_inits;
        });
        lorascope::ops::set_pool_threads(1);
        lorascope::ops::set_pool_threads(2);  // one fresh worker, asleep in its set-up
        QCOMPARE(threads_that_ran(2).size(), size_t{2});
        lorascope::ops::set_pool_worker_init([] {});
    }

    // With a delegate, every parallel_for of more than one chunk goes to it (the engine hands them
    // to ATen's team where the products run there); a call from inside a chunk stays serial, and a
    // single-chunk range runs in place. Cleared, the pool is back.
    void a_delegate_gets_the_loops() {
        static std::atomic<int> delegated{0};
        lorascope::ops::set_parallel_delegate([](int64_t b, int64_t e, int64_t grain,
                                                 const std::function<void(int64_t, int64_t)>& fn) {
            ++delegated;
            for (int64_t i = b; i < e; i += grain) fn(i, std::min(e, i + grain));  // in order, this thread
        });
        std::vector<int> seen(100, 0);
        int nested = 0;
        parallel_for(0, 100, 10, [&](int64_t b, int64_t e) {
            QVERIFY(lorascope::ops::in_parallel_region());
            for (int64_t i = b; i < e; ++i) ++seen[static_cast<size_t>(i)];
            parallel_for(0, 50, 1, [&](int64_t nb, int64_t ne) { nested += static_cast<int>(ne - nb); });
        });
        QCOMPARE(delegated.load(), 1);  // the nested calls ran serially, not through the delegate
        QCOMPARE(nested, 10 * 50);
        for (int v : seen) QCOMPARE(v, 1);
        QVERIFY(!lorascope::ops::in_parallel_region());
        parallel_for(0, 5, 10, [&](int64_t, int64_t) {});  // one chunk: in place
        QCOMPARE(delegated.load(), 1);
        lorascope::ops::set_parallel_delegate(nullptr);
        QCOMPARE(threads_that_ran(64).size(), size_t{2});
        QCOMPARE(delegated.load(), 1);
    }
};

QTEST_GUILESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
