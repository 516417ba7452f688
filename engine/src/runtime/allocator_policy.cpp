#include "runtime/allocator_policy.h"

#include <cstdlib>
#include <mutex>  // also defines __GLIBC__ on glibc
#if defined(__GLIBC__)
#include <malloc.h>
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

}  // namespace lorascope::runtime
