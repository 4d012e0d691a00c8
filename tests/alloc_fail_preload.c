/* A module preloaded (LD_PRELOAD) into a program a test runs, the plexus
 * CLI (tests/test_cli_run.c): the allocator's wrappers of alloc_interpose.c
 * count the program's heap allocations, every thread's together, and fail
 * one on request:
 *
 *   PLEXUS_TEST_FAIL_ALLOC=N           the N-th allocation (from 1) fails as
 *                                      the allocator does when memory runs
 *                                      out; every other succeeds
 *   PLEXUS_TEST_ALLOC_COUNT_FILE=PATH  at exit, the number of allocations
 *                                      made is written to PATH, in decimal
 *                                      (no file: the program did not exit)
 *
 * Of no use in sanitizer builds or under valgrind, which replace the
 * allocator themselves (alloc_interpose_available). */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "alloc_interpose.h"

static atomic_size_t count;
/* PLEXUS_TEST_FAIL_ALLOC, read at the first allocation (0: none fails). */
static atomic_size_t fail_at;
static atomic_bool fail_at_read;

/* The variable's decimal value; 0 when unset. strtoull is not used: the
 * allocator must not depend on the locale. */
static size_t env_count(const char *name) {
    const char *v = getenv(name);
    size_t n = 0;
    for (; v && *v >= '0' && *v <= '9'; v++) {
        n = n * 10 + (size_t)(*v - '0');
    }
    return n;
}

bool alloc_interpose_fails(void) {
    /* The first allocations come before any thread is started: no race. */
    if (!atomic_load(&fail_at_read)) {
        atomic_store(&fail_at, env_count("PLEXUS_TEST_FAIL_ALLOC"));
        atomic_store(&fail_at_read, true);
    }
    size_t n = atomic_fetch_add(&count, 1) + 1;
    return n == atomic_load(&fail_at);
}

/* Run by exit(), after the program's atexit handlers and the destructors of
 * the libraries loaded after this module. */
__attribute__((destructor)) static void write_count(void) {
    const char *path = getenv("PLEXUS_TEST_ALLOC_COUNT_FILE");
    if (!path) {
        return;
    }
    char text[32];
    int len = snprintf(text, sizeof text, "%zu\n", atomic_load(&count));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, text, (size_t)len) == len;
    if (fd >= 0 && close(fd) != 0) {
        ok = false;
    }
    if (!ok) {
        unlink(path);
    }
}
