/* The intra-op thread pool (threadpool.h).
 *
 * One run at a time owns the workers: the caller takes `busy` (trylock; a
 * caller that cannot runs its tasks inline), publishes the run under
 * `lock`, bumps `generation` and wakes the workers. A worker that sees the
 * new generation joins the run under `lock` (`joined`) unless the run is
 * already `closed`. Everyone, the caller included, claims tasks from the
 * atomic counter `next` until none are left; the caller then closes the
 * run and waits only for the workers that joined it to leave, so the run's
 * fields are never changed under a worker's feet and the tasks' writes are
 * visible to the caller (the leaving's release and the caller's acquire
 * order them). A worker that wakes late (a core taken by another process,
 * a virtual CPU the host has not scheduled) finds the run closed and never
 * touches it: the caller does not wait for it. When every worker had to
 * check out of every run, such a worker held the caller up: openWakeWord's
 * mel front end, whose runs are tens of microseconds, read 0.94 ms at two
 * threads against 0.11 at one on a shared 2-core VM.
 *
 * Waiting spins first, then sleeps: a worker between runs watches
 * `generation` for PLXK_POOL_SPIN_NS before it waits on `wake`, and the
 * caller watches `joined` as long before it waits on `done`. A network's
 * layers follow each other within microseconds, so the workers are still
 * awake for the next one; a futex wake-up and a context switch (10 to 15
 * us here) per layer made two threads slower than one on models of small
 * layers. The spin is bounded, so an idle pool costs nothing after it. */
#define _GNU_SOURCE /* sysconf(_SC_NPROCESSORS_ONLN) */
#include "threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct worker {
    plxk_pool *pool;
    size_t index; /* 1 .. threads-1; the caller is thread 0 */
    pthread_t thread;
} worker;

struct plxk_pool {
    size_t threads;  /* the workers and the caller */
    worker *workers; /* threads - 1 */
    pthread_mutex_t busy; /* held by the caller whose run owns the workers */
    pthread_mutex_t lock; /* protects everything below but `next` */
    pthread_cond_t wake;  /* workers wait here for a new run or stop */
    pthread_cond_t done;  /* the caller waits here for joined == 0 */
    atomic_ulong generation;  /* bumped for every run, under `lock` */
    atomic_ulong joined;      /* workers in the run (changed under `lock`) */
    bool closed;              /* the caller has run out of tasks: nobody joins */
    bool stop;
    plxk_pool_task_fn fn;
    void *ctx;
    size_t task_count;
    atomic_size_t next; /* the next unclaimed task */
};

/* Claims and runs tasks until none are left. */
static void run_tasks(plxk_pool *p, plxk_pool_task_fn fn, void *ctx, size_t count,
                      size_t thread) {
    for (;;) {
        size_t task = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (task >= count) {
            return;
        }
        fn(ctx, task, thread);
    }
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins up to PLXK_POOL_SPIN_NS until *v differs from `from` (true) or the
 * time is up (false). */
static bool spin_ulong(atomic_ulong *v, unsigned long from) {
    uint64_t start = now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) != from) {
            return true;
        }
        cpu_relax();
        if (i % 64 == 0 && now_ns() - start > PLXK_POOL_SPIN_NS) {
            return false;
        }
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    plxk_pool *p = w->pool;
    unsigned long seen = 0; /* the generation at creation: a run may start before we do */
    for (;;) {
        spin_ulong(&p->generation, seen);
        pthread_mutex_lock(&p->lock);
        while (!p->stop && atomic_load_explicit(&p->generation, memory_order_relaxed) == seen) {
            pthread_cond_wait(&p->wake, &p->lock);
        }
        if (p->stop) {
            break;
        }
        seen = atomic_load_explicit(&p->generation, memory_order_relaxed);
        if (p->closed) { /* done without us */
            pthread_mutex_unlock(&p->lock);
            continue;
        }
        atomic_fetch_add_explicit(&p->joined, 1, memory_order_relaxed);
        plxk_pool_task_fn fn = p->fn;
        void *ctx = p->ctx;
        size_t count = p->task_count;
        pthread_mutex_unlock(&p->lock);
        run_tasks(p, fn, ctx, count, w->index);
        pthread_mutex_lock(&p->lock);
        if (atomic_fetch_sub_explicit(&p->joined, 1, memory_order_release) == 1 && p->closed) {
            pthread_cond_signal(&p->done);
        }
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Stops and joins the first `started` workers. */
static void stop_workers(plxk_pool *p, size_t started) {
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < started; i++) {
        pthread_join(p->workers[i].thread, NULL);
    }
}

plxk_pool *plxk_pool_create(size_t threads, char *err, size_t err_size) {
    if (threads < 1 || threads > PLXK_POOL_MAX_THREADS) {
        if (err_size) {
            snprintf(err, err_size, "cpu_ref: a thread pool has 1 to %d threads, not %zu",
                     PLXK_POOL_MAX_THREADS, threads);
        }
        return NULL;
    }
    plxk_pool *p = calloc(1, sizeof *p);
    worker *workers = threads > 1 ? calloc(threads - 1, sizeof *workers) : NULL;
    if (!p || (threads > 1 && !workers)) {
        free(p);
        free(workers);
        if (err_size) {
            snprintf(err, err_size, "cpu_ref: out of memory for a pool of %zu threads", threads);
        }
        return NULL;
    }
    p->threads = threads;
    p->workers = workers;
    pthread_mutex_init(&p->busy, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->joined, 0);
    for (size_t i = 0; i + 1 < threads; i++) {
        workers[i].pool = p;
        workers[i].index = i + 1;
        int rc = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
        if (rc != 0) {
            if (err_size) {
                snprintf(err, err_size, "cpu_ref: cannot start thread %zu of %zu: %s", i + 1,
                         threads, strerror(rc));
            }
            stop_workers(p, i);
            p->threads = 1; /* nothing left to join */
            plxk_pool_destroy(p);
            return NULL;
        }
    }
    return p;
}

void plxk_pool_destroy(plxk_pool *pool) {
    if (!pool) {
        return;
    }
    if (pool->threads > 1) {
        stop_workers(pool, pool->threads - 1);
    }
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->busy);
    free(pool->workers);
    free(pool);
}

size_t plxk_pool_threads(const plxk_pool *pool) {
    return pool ? pool->threads : 1;
}

void plxk_pool_run(plxk_pool *pool, size_t task_count, double cost_ns,
                      plxk_pool_task_fn fn, void *ctx) {
    if (!pool || pool->threads == 1 || task_count <= 1 || cost_ns < PLXK_POOL_MIN_COST_NS ||
        pthread_mutex_trylock(&pool->busy) != 0) {
        for (size_t task = 0; task < task_count; task++) {
            fn(ctx, task, 0);
        }
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->task_count = task_count;
    pool->closed = false;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
    /* release: a spinning worker that sees the new generation sees the run */
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_tasks(pool, fn, ctx, task_count, 0);

    /* every task is claimed: close the run, then wait for those who joined */
    pthread_mutex_lock(&pool->lock);
    pool->closed = true;
    unsigned long left = atomic_load_explicit(&pool->joined, memory_order_acquire);
    pthread_mutex_unlock(&pool->lock);
    while (left > 0 && spin_ulong(&pool->joined, left)) {
        left = atomic_load_explicit(&pool->joined, memory_order_acquire);
    }
    if (left > 0) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load_explicit(&pool->joined, memory_order_acquire) > 0) {
            pthread_cond_wait(&pool->done, &pool->lock);
        }
        pthread_mutex_unlock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->busy);
}

size_t plxk_pool_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        return 1;
    }
    return n > PLXK_POOL_MAX_THREADS ? PLXK_POOL_MAX_THREADS : (size_t)n;
}
