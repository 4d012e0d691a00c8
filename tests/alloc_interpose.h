/* The heap allocator (malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc) replaced by wrappers that forward to glibc's __libc_*
 * functions, except for the allocations they are told to fail, which fail
 * as the allocator does when memory runs out (NULL and ENOMEM;
 * posix_memalign returns ENOMEM). Linked, with the file that decides which,
 * into a test program (alloc_counter.c) or into a module preloaded into the
 * plexus CLI (alloc_fail_preload.c); the definitions take precedence over
 * libc's for every library in the process. */
#ifndef PLEXUS_TEST_ALLOC_INTERPOSE_H
#define PLEXUS_TEST_ALLOC_INTERPOSE_H

#include <stdbool.h>
#include <stdlib.h>

/* AddressSanitizer and ThreadSanitizer replace the allocator themselves:
 * alloc_interpose.c then defines nothing. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOC_INTERPOSE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ALLOC_INTERPOSE_OFF 1
#endif
#endif

/* Whether the wrappers are in place: not in sanitizer builds, nor under
 * valgrind (the valgrind test setup sets PLEXUS_TEST_VALGRIND), which
 * replaces the allocator too. */
static inline bool alloc_interpose_available(void) {
#ifdef ALLOC_INTERPOSE_OFF
    return false;
#else
    return getenv("PLEXUS_TEST_VALGRIND") == NULL;
#endif
}

/* Defined by the program or module that links alloc_interpose.c: called
 * once for every allocation, from any thread; true fails it. It must not
 * allocate. */
bool alloc_interpose_fails(void);

#endif
