// glibc's malloc policy for a CPU engine's process (see allocator_policy.cpp for why), and
// handing free heap pages back.
#pragma once

namespace lorascope::runtime {

// Fixes glibc's mmap and trim thresholds once per process, unless the user set any malloc tunable
// (MALLOC_*_ variables or GLIBC_TUNABLES). A no-op elsewhere than glibc.
void settle_cpu_allocator();

// Hands the free pages of every malloc arena back to the system (after a step freed tens of MB);
// a no-op elsewhere than glibc.
void return_free_heap_pages();

}  // namespace lorascope::runtime
