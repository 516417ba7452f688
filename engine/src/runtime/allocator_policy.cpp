#include "runtime/allocator_policy.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>  // also defines __GLIBC__ on glibc
#include <new>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace lorascope::runtime {

// glibc moves its mmap threshold up to the size of the largest block freed so far (at most
// 32 MiB), and the trim threshold with it. Whether a step's ~32 MB of logits (BLOOM's 250880-token
// head over 32 rows) then came from the heap or from fresh pages depended on the order in which
// threads freed their blocks, so W3's int8 peak RSS was 813 or 879 MiB from one run to the next
// (same binary, same input). Fixed thresholds give 818-819 MiB every run at the same speed:
// blocks under 64 MiB come from the heap and are reused from step to step, and the heap is not
// trimmed on every free (a 128 KiB trim threshold, glibc's fixed default, cost W3 ~15% in page
// faults); BatchRunner hands freed pages back after large prefills instead.
void settle_cpu_allocator() {
#if defined(__GLIBC__)
    static std::once_flag once;
    std::call_once(once, [] {
        for (const char* name : {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                                 "MALLOC_MMAP_MAX_"})
            if (std::getenv(name)) return;   // the user's policy wins
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
    });
#endif
}

void return_free_heap_pages() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

std::shared_ptr<void> allocate_huge_page_block(size_t bytes) {
    const size_t size = (std::max<size_t>(bytes, 1) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // A mapping of its own, one huge page longer than asked, so that an aligned block fits in it.
    void* raw = ::mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    void* block = reinterpret_cast<void*>((start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
    ::madvise(block, size, MADV_HUGEPAGE);  // advice: without THP the block is ordinary memory
    return std::shared_ptr<void>(block, [raw, size](void*) { ::munmap(raw, size + kHugePageBytes); });
#else
    void* block = std::aligned_alloc(kHugePageBytes, size);
    if (!block) throw std::bad_alloc();
    std::memset(block, 0, size);
    return std::shared_ptr<void>(block, [](void* p) { std::free(p); });
#endif
}

}  // namespace lorascope::runtime
