/* Counts heap allocations made by the calling thread, by interposing the
 * allocator (malloc, calloc, realloc, posix_memalign, aligned_alloc) in the
 * test executable. Not available under AddressSanitizer, ThreadSanitizer or
 * valgrind, which
 * replace the allocator themselves: alloc_counter_available() says so. */
#ifndef PLEXUS_TEST_ALLOC_COUNTER_H
#define PLEXUS_TEST_ALLOC_COUNTER_H

#include <stdbool.h>
#include <stddef.h>

bool alloc_counter_available(void);
/* Starts counting on this thread from zero. */
void alloc_counter_start(void);
/* Stops counting; returns the allocations seen since start. */
size_t alloc_counter_stop(void);

#endif
