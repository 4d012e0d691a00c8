/* See alloc_counter.h. glibc exports its allocator as __libc_* as well, so
 * the wrappers defined here (which take precedence over libc's for every
 * library in the process) can count and forward. */
#include "alloc_counter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ALLOC_COUNTER_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ALLOC_COUNTER_OFF 1
#endif
#endif

static _Thread_local bool counting;
static _Thread_local size_t count, fail_at;

void alloc_counter_start(void) {
    count = 0;
    fail_at = 0;
    counting = true;
}

void alloc_counter_fail_at(size_t n) {
    count = 0;
    fail_at = n;
    counting = true;
}

size_t alloc_counter_stop(void) {
    counting = false;
    fail_at = 0;
    return count;
}


#ifdef ALLOC_COUNTER_OFF
bool alloc_counter_available(void) {
    return false;
}
#else
bool alloc_counter_available(void) {
    return getenv("PLEXUS_TEST_VALGRIND") == NULL;
}

/* Counts one allocation; true when it is the one to fail. */
static bool counted_fails(void) {
    if (!counting) {
        return false;
    }
    count++;
    return fail_at != 0 && count == fail_at;
}

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void __libc_free(void *p);

void *malloc(size_t size) {
    if (counted_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    if (counted_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    if (counted_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, size);
}

void free(void *p) {
    __libc_free(p);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (counted_fails()) {
        return ENOMEM;
    }
    if (alignment < sizeof(void *) || (alignment & (alignment - 1))) {
        return EINVAL;
    }
    void *p = __libc_memalign(alignment, size);
    if (!p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    if (counted_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(alignment, size);
}
#endif
