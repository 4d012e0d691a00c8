/* Counts heap allocations made by the calling thread, and fails one on
 * request, through the allocator's wrappers of alloc_interpose.c linked into
 * the test executable (a test program links both files). Not available under
 * AddressSanitizer, ThreadSanitizer or valgrind, which replace the allocator
 * themselves: alloc_counter_available() says so. */
#ifndef PLEXUS_TEST_ALLOC_COUNTER_H
#define PLEXUS_TEST_ALLOC_COUNTER_H

#include <stdbool.h>
#include <stddef.h>

bool alloc_counter_available(void);
/* Starts counting on this thread from zero. */
void alloc_counter_start(void);
/* Starts counting on this thread from zero, and makes the n-th allocation
 * from here (1-based) fail as the allocator does when memory runs out
 * (NULL and ENOMEM; posix_memalign returns ENOMEM). The others succeed. */
void alloc_counter_fail_at(size_t n);
/* Stops counting (and failing); returns the allocations seen since start. */
size_t alloc_counter_stop(void);

#endif
