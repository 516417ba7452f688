// glibc's malloc policy for a CPU engine's process (see allocator_policy.cpp for why).
#pragma once

namespace lorascope::runtime {

// Fixes glibc's mmap and trim thresholds once per process, unless the user set any malloc tunable
// (MALLOC_*_ variables or GLIBC_TUNABLES). A no-op elsewhere than glibc.
void settle_cpu_allocator();

}  // namespace lorascope::runtime
