/* The kernels' thread pool (kernels/threadpool.h) under concurrent
 * callers, as a plain program that ThreadSanitizer builds run (suite
 * 'tsan'; Criterion's runner does not work under TSan). Two caller threads
 * share a pool of three: each run's tasks write their own slots, and the
 * caller checks every slot once the run returns (the pool's promise that
 * the tasks' writes are visible then). Runs follow each other at once (the
 * workers still spinning), after pauses longer than the spin (the workers
 * asleep), and nested (a task that runs the pool again runs inline).
 * Prints one line and exits 0, or names the first wrong slot and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "threadpool.h"

enum { TASKS = 24, RUNS = 400, CALLERS = 2 };

typedef struct job {
    unsigned run;
    unsigned slots[TASKS];
    plxk_pool *pool;
    int nested;
} job;

static void nested_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    job *j = ctx;
    j->slots[task] += 1;
}

static void task_fn(void *ctx, size_t task, size_t thread) {
    job *j = ctx;
    if (thread >= plxk_pool_threads(j->pool)) {
        j->slots[task] = 0xdead; /* a thread number out of range */
        return;
    }
    j->slots[task] = j->run * 1000u + (unsigned)task;
    if (j->nested && task == 0) {
        /* a run from inside a task: inline, on this thread */
        job inner = {0};
        inner.pool = j->pool;
        plxk_pool_run(j->pool, TASKS, 1e9, nested_task, &inner);
        for (size_t t = 0; t < TASKS; t++) {
            if (inner.slots[t] != 1) {
                j->slots[task] = 0xbeef;
            }
        }
    }
}

typedef struct caller {
    plxk_pool *pool;
    int id;
    int bad;
} caller;

static void *caller_main(void *arg) {
    caller *c = arg;
    job j = {0};
    j.pool = c->pool;
    for (unsigned r = 1; r <= RUNS && !c->bad; r++) {
        j.run = r;
        j.nested = r % 50 == 0;
        plxk_pool_run(c->pool, TASKS, 1e9, task_fn, &j); /* 1 s: never inline for cost */
        for (size_t t = 0; t < TASKS; t++) {
            if (j.slots[t] != r * 1000u + (unsigned)t) {
                fprintf(stderr, "stress_pool: caller %d, run %u, task %zu: slot %u\n", c->id, r,
                        t, j.slots[t]);
                c->bad = 1;
                break;
            }
        }
        if (r % 40 == 0) {
            /* longer than the spin: the workers go to sleep */
            struct timespec ts = {0, (long)PLXK_POOL_SPIN_NS * 3};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int main(void) {
    char err[256];
    plxk_pool *pool = plxk_pool_create(3, err, sizeof err);
    if (!pool) {
        fprintf(stderr, "stress_pool: %s\n", err);
        return 1;
    }
    pthread_t threads[CALLERS];
    caller callers[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        callers[i] = (caller){pool, i, 0};
        if (pthread_create(&threads[i], NULL, caller_main, &callers[i]) != 0) {
            fprintf(stderr, "stress_pool: cannot start caller %d\n", i);
            return 1;
        }
    }
    int bad = 0;
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(threads[i], NULL);
        bad |= callers[i].bad;
    }
    plxk_pool_destroy(pool);
    printf("stress_pool: %d callers x %d runs of %d tasks on 3 threads: %s\n", CALLERS, RUNS,
           TASKS, bad ? "FAILED" : "ok");
    return bad;
}
