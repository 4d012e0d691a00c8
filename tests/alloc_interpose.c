/* See alloc_interpose.h. glibc exports its allocator as __libc_* as well,
 * so the wrappers can forward to it. */
#include "alloc_interpose.h"

#ifndef ALLOC_INTERPOSE_OFF
#include <errno.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void __libc_free(void *p);

void *malloc(size_t size) {
    if (alloc_interpose_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    if (alloc_interpose_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    if (alloc_interpose_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, size);
}

void free(void *p) {
    __libc_free(p);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alloc_interpose_fails()) {
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
    if (alloc_interpose_fails()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(alignment, size);
}
#endif
