/* cpu_ref's intra-op thread pool: persistent worker threads that split one
 * kernel's work (GEMM tiles, rows of an output) between them.
 *
 * Ownership: the backend instance creates one pool (option `threads`) and
 * destroys it at backend destroy; kernels borrow it through
 * plxk_kernel_args. A pool of 1 thread has no workers: everything runs on
 * the calling thread.
 *
 * Thread-safety: plxk_pool_run may be called from any number of threads
 * at once (the backend executes different working memories concurrently).
 * One caller at a time gets the workers; a caller that finds them busy runs
 * its tasks itself, on its own thread, as thread 0. Nested calls (a task that
 * calls plxk_pool_run on the same pool) run inline the same way, so
 * nothing can deadlock. Results are the same either way; only the speed
 * differs.
 *
 * Errors: only plxk_pool_create fails (out of memory, a thread that
 * cannot be started); running never fails and never allocates. */
#ifndef PLXK_THREADPOOL_H
#define PLXK_THREADPOOL_H

#include <stddef.h>

/* The most threads a pool may have (the option `threads` accepts 1 to this). */
#define PLXK_POOL_MAX_THREADS 256

typedef struct plxk_pool plxk_pool;

/* One task of a run: `task` in [0, task_count), `thread` in [0, the pool's
 * thread count) says which thread runs it, so that a task can use that
 * thread's slice of a workspace. Two tasks with the same `thread` never run
 * at the same time. */
typedef void (*plxk_pool_task_fn)(void *ctx, size_t task, size_t thread);

/* Creates a pool of `threads` threads in all (1 to PLXK_POOL_MAX_THREADS),
 * the calling thread of each run being one of them: threads - 1 workers are
 * started now and wait for work, spinning for PLXK_POOL_SPIN_NS after each
 * run, then sleeping. Returns NULL on
 * failure, with the reason written into err (err_size bytes, may be 0). */
plxk_pool *plxk_pool_create(size_t threads, char *err, size_t err_size);

/* Stops and joins the workers and frees the pool. NULL is ignored. No run
 * may be in progress. */
void plxk_pool_destroy(plxk_pool *pool);

/* The pool's thread count (the workers and the caller); 1 for NULL. Workspaces
 * that are split per thread need this many slices. */
size_t plxk_pool_threads(const plxk_pool *pool);

/* Below this estimated cost of a run on one thread, in nanoseconds, the
 * calling thread runs it alone: waking the sleeping workers (a futex wake
 * and a context switch each, 10 to 15 us measured here) would cost more than
 * they save. Tiny layers (the example model's) ran 5 times slower on two
 * threads than on one before this. */
#define PLXK_POOL_MIN_COST_NS 30000.0

/* How long an idle worker, and a caller waiting for the workers, spin
 * before they sleep (threadpool.c). */
#define PLXK_POOL_SPIN_NS 200000u

/* Runs fn(ctx, task, thread) once for every task in [0, task_count), in no
 * particular order, and returns when all have returned. The calling thread
 * runs tasks too (as thread 0). With a NULL pool, a pool of 1, a single
 * task, a `cost_ns` (the caller's estimate of the whole run's time on one
 * thread) below PLXK_POOL_MIN_COST_NS, or workers busy with another
 * caller's run, every task runs on the calling thread, in order, with
 * thread 0. task_count 0 returns at once. Allocates nothing. Memory written
 * by the tasks is visible to the caller when this returns. */
void plxk_pool_run(plxk_pool *pool, size_t task_count, double cost_ns,
                      plxk_pool_task_fn fn, void *ctx);

/* The number of CPUs online (sysconf), at least 1: the default of the option
 * `threads`, capped at PLXK_POOL_MAX_THREADS. */
size_t plxk_pool_default_threads(void);

#endif /* PLXK_THREADPOOL_H */
