// The engine thread's compute threads: `EngineOptions::threads` at most, fewer while other programs
// keep cores busy (util/core_load.h says why and how it tells). Checked between steps, never during
// one. Only our pool (ops/thread_pool.h) adapts: its kernels split outputs, never a sum, so their
// results do not depend on the thread count; ATen's and oneDNN's do, in the last bits (the demo
// BART's sampled logprobs on 1 and 2 threads: -0.6644451 and -0.66444474), and a seeded request's
// tokens must not depend on how busy the machine is. ATen's count stays as set at the start.
//
// One runtime holds the cores at a time. Where the linears run on our panel kernels (float32, int8
// and 4-bit; bfloat16 without AVX-512 BF16: ops/cpu_matmul.h), ATen's own operators get one thread
// and our pool gets them all (the larger ones run on it: ops/aten_on_pool.h); where they run on
// oneDNN, in ATen's team, our kernels'
// loops run there too (ops::set_parallel_delegate) and the count does not adapt. Two runtimes with
// a thread per core each spin on the cores the other needs (libgomp's idle workers ~300k rounds
// after each of ATen's regions): on the 2-core Zen 3 (AVX2), W1 in int8 ran at 490 tokens/s on two
// threads and 496 on one (180% CPU), 660-760 with ATen on one thread; W2 230-252 -> 325-343, W3
// 102-104 -> 119-122. On the 2-core Zen 4 (AVX-512 VNNI), W1 in int8 on oneDNN ran at 0.76x of
// the build before the pool until the pool's loops joined ATen's team (docs/benchmarks.md, issue 28).
#pragma once

#include <optional>

#include "util/core_load.h"

namespace lorascope::engine_detail {

class ComputeThreads {
public:
    // `requested` <= 0: all cores. `adaptive` false: always `requested`. `products_on_pool`: the
    // model's linears run on our pool's kernels (ops::cpu_matmul_runs_on_pool).
    ComputeThreads(int requested, bool adaptive, bool products_on_pool);
    // Before a step: applies a new count when the machine's load asks for one; returns the count.
    int before_step();

private:
    int threads_ = 1;
    std::optional<util::CoreLoadMonitor> monitor_;
    std::optional<util::ThreadGovernor> governor_;
};

}  // namespace lorascope::engine_detail
