/* See alloc_counter.h. The allocator's wrappers are alloc_interpose.c's;
 * this file decides, per thread, which allocation they fail. */
#include "alloc_counter.h"

#include "alloc_interpose.h"

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

bool alloc_counter_available(void) {
    return alloc_interpose_available();
}

bool alloc_interpose_fails(void) {
    if (!counting) {
        return false;
    }
    count++;
    return fail_at != 0 && count == fail_at;
}
