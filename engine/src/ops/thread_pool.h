// The compute threads of our CPU kernels: a pool that shares out work in small chunks on demand
// and whose idle threads spin briefly, then sleep.
//
// Why not OpenMP's team (ATen's at::parallel_for): libgomp splits a loop statically, one share per
// thread, and every region ends at a barrier; a share whose thread was descheduled holds everyone
// else, who spin in the barrier (libgomp's default spins ~300k rounds). Beside one busy-looping
// process on a 2-core machine, W1 fell to 0.30x of its quiet speed, 80% of samples in libgomp's
// spin loops (issue 28). Here the calling thread takes part, chunks are claimed one at a time, so a
// descheduled worker's chunks are done by whoever is running, and a waiting thread spins at most
// kSpin (then yields, or sleeps on a condition variable).
//
// Torch-free and portable (std::thread, atomics; a pause instruction where there is one).
#pragma once

#include <cstdint>
#include <functional>

namespace lorascope::ops {

// fn(begin, end) over [begin, end) in chunks of at least `grain` indices, on the calling thread and
// the pool's workers; returns when every chunk is done. Serial when the range is one chunk, when
// called from inside a parallel_for (nested), or when another thread is running one already.
// The first exception thrown by fn is rethrown here, after every claimed chunk has finished.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Hands every parallel_for to another runtime's loop (null: back to the pool). Where the products run
// in ATen's OpenMP team (oneDNN's kernels), the engine passes our kernels there too: two runtimes
// with a thread per core each made the pool's spinning workers and libgomp's wait for the same two
// cores. On the 2-core AMD EPYC (Zen 4, AVX-512 VNNI), W1 in int8 ran at 1707-1815 tokens/s with
// both against 2146-2364 before the pool existed (docs/benchmarks.md, 2026-12-04).
using ParallelDelegate = void (*)(int64_t begin, int64_t end, int64_t grain,
                                  const std::function<void(int64_t, int64_t)>& fn);
void set_parallel_delegate(ParallelDelegate delegate);

// Threads that parallel_for uses, the caller included (at least 1). Default: the hardware's
// thread count. Changing it joins or starts workers; call it between products, not during one.
void set_pool_threads(int n);
int pool_threads();

// Runs `init` at the start of every worker thread (now and later): the engine makes each worker's
// own OpenMP team one thread, so that oneDNN or ATen called from a chunk does not start a team per
// worker. Restarts the workers.
void set_pool_worker_init(void (*init)());

// How long an idle worker spins before it sleeps, in microseconds (LORASCOPE_POOL_SPIN_US, read
// once; docs/benchmarks.md has the measurement behind the default).
int64_t pool_spin_us();

// True on a thread that is running a chunk of a parallel_for.
bool in_parallel_region();

}  // namespace lorascope::ops
