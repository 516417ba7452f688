// glibc's malloc policy for a CPU engine's process (see allocator_policy.cpp for why), handing
// free heap pages back, and blocks in huge pages for data every decoding step streams through.
#pragma once

#include <cstddef>
#include <memory>

namespace lorascope::runtime {

// Fixes glibc's mmap and trim thresholds once per process, unless the user set any malloc tunable
// (MALLOC_*_ variables or GLIBC_TUNABLES). A no-op elsewhere than glibc.
void settle_cpu_allocator();

// Hands the free pages of every malloc arena back to the system (after a step freed tens of MB);
// a no-op elsewhere than glibc.
void return_free_heap_pages();

// A block of at least `bytes` (zeroed), aligned to 2 MiB and advised for transparent huge pages
// where the kernel has them (Linux, THP in "madvise" or "always" mode), for data that every
// decoding step streams through. Freed when the last copy of the pointer goes. Throws
// std::bad_alloc when the memory is not there.
std::shared_ptr<void> allocate_huge_page_block(size_t bytes);
constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace lorascope::runtime
