// Runs a piece of LibTorch work (loading a model or an adapter) on a short-lived thread of its own.
//
// Why: OpenMP (LibTorch's, oneDNN's and OpenBLAS's threading here) gives every thread that opens a
// parallel region a pool of worker threads that lives as long as that thread. A load on the
// caller's thread (the CLI's main thread, the GUI thread) leaves such a pool behind next to the
// engine thread's; libgomp then counts more threads than cores and stops spinning between parallel
// regions, so every matmul of every decode step pays a futex wake-up. Measured on W1 with 2 threads
// and OMP_NUM_THREADS=2: 470 tokens/s with the load on the main thread, 550 with it here. A
// thread that exits takes its pool with it.
#pragma once

#include <exception>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace lorascope::util {

template <class F>
auto run_on_scratch_thread(F&& work) -> std::invoke_result_t<F&> {
    using R = std::invoke_result_t<F&>;
    std::optional<R> result;
    std::exception_ptr error;
    std::thread([&] {
        try {
            result.emplace(work());
        } catch (...) {
            error = std::current_exception();
        }
    }).join();
    if (error) std::rethrow_exception(error);
    return std::move(*result);
}

}  // namespace lorascope::util
