/* The execution scheduler: worker threads, each with its own working memory
 * of one loaded network, serving three priority queues by weighted
 * round-robin (network.h, "Scheduling executions on worker threads").
 *
 * One mutex guards the queues, the free list, the round-robin position and
 * the shutdown flag; workers sleep on one condition variable. Nothing is
 * held while an execution or a completion callback runs, so callbacks may
 * submit. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <plexus/backend.h>
#include <plexus/network.h>

#include "internal.h"

#define PRIORITY_COUNT 3
#define MAX_WORKERS 1024
/* Finished requests kept for reuse; beyond this they are freed. */
#define MAX_RECYCLED 256

/* The round-robin cycle: one entry per turn (network.h). */
static const plx_priority turns[] = {
    PLX_PRIORITY_HIGH,   PLX_PRIORITY_HIGH,   PLX_PRIORITY_HIGH, PLX_PRIORITY_HIGH,
    PLX_PRIORITY_MEDIUM, PLX_PRIORITY_MEDIUM, PLX_PRIORITY_LOW,
};
#define TURN_COUNT (sizeof turns / sizeof turns[0])

/* One queued execution. The copied binding and id arrays live in `storage`
 * (bindings first, then ids, so that both are aligned); args points at
 * them. */
typedef struct request {
    struct request *next;
    size_t capacity; /* bytes of storage */
    plx_execute_args args;
    plx_completion_fn done;
    void *user_data;
    double submitted_ms;
    max_align_t storage[];
} request;

typedef struct queue {
    request *head;
    request *tail;
} queue;

typedef struct worker {
    plx_scheduler *scheduler;
    plx_working_memory *working_memory;
    pthread_t thread;
    bool started;
} worker;

struct plx_scheduler {
    plx_loaded_network *loaded;
    worker *workers;
    size_t worker_count;

    pthread_mutex_t lock;
    pthread_cond_t work; /* a request was queued, or shutdown began */
    queue queues[PRIORITY_COUNT];
    size_t queued;       /* requests in all queues */
    size_t turn;         /* next turn of the cycle */
    bool shutting_down;
    request *recycled;   /* free list */
    size_t recycled_count;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The next request by the round-robin rule; the caller holds the lock and
 * knows that one is queued. */
static request *take(plx_scheduler *s) {
    for (size_t i = 0; i < TURN_COUNT; i++) {
        size_t t = (s->turn + i) % TURN_COUNT;
        queue *q = &s->queues[turns[t]];
        if (!q->head) {
            continue;
        }
        request *r = q->head;
        q->head = r->next;
        if (!q->head) {
            q->tail = NULL;
        }
        r->next = NULL;
        s->turn = (t + 1) % TURN_COUNT;
        if (--s->queued == 0) {
            s->turn = 0; /* the cycle restarts when the queues run dry */
        }
        return r;
    }
    return NULL; /* not reached: queued > 0 means some queue has a head */
}

/* Keeps a finished request for reuse, or frees it. The caller holds the
 * lock. */
static void recycle(plx_scheduler *s, request *r) {
    if (s->recycled_count >= MAX_RECYCLED) {
        free(r);
        return;
    }
    r->next = s->recycled;
    s->recycled = r;
    s->recycled_count++;
}

static void *work(void *arg) {
    worker *w = arg;
    plx_scheduler *s = w->scheduler;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->queued == 0 && !s->shutting_down) {
            pthread_cond_wait(&s->work, &s->lock);
        }
        if (s->queued == 0) {
            break; /* shutting down and drained */
        }
        request *r = take(s);
        pthread_mutex_unlock(&s->lock);

        double start = now_ms();
        plx_status st = plx_loaded_network_execute_with(s->loaded, w->working_memory, &r->args);
        double end = now_ms();
        plx_execution_timing timing = {start - r->submitted_ms, end - start};
        if (timing.queued_ms < 0) {
            timing.queued_ms = 0;
        }
        if (timing.run_ms < 0) {
            timing.run_ms = 0;
        }
        if (r->done) {
            r->done(r->user_data, st, &timing);
        }
        plx_status_free(st);

        pthread_mutex_lock(&s->lock);
        recycle(s, r);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Stops and joins the started workers, destroys the working memories, the
 * queues' leftovers and the scheduler. Tolerates a partly created one. */
static void teardown(plx_scheduler *s, bool sync_ready) {
    if (sync_ready) {
        pthread_mutex_lock(&s->lock);
        s->shutting_down = true;
        pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->lock);
    }
    for (size_t i = 0; s->workers && i < s->worker_count; i++) {
        if (s->workers[i].started) {
            pthread_join(s->workers[i].thread, NULL);
        }
        plx_working_memory_destroy(&s->workers[i].working_memory);
    }
    /* Workers drain the queues before they exit; only a failed create can
     * leave requests (it never queued any), so this frees the free list. */
    for (int p = 0; p < PRIORITY_COUNT; p++) {
        while (s->queues[p].head) {
            request *r = s->queues[p].head;
            s->queues[p].head = r->next;
            free(r);
        }
    }
    while (s->recycled) {
        request *r = s->recycled;
        s->recycled = r->next;
        free(r);
    }
    if (sync_ready) {
        pthread_cond_destroy(&s->work);
        pthread_mutex_destroy(&s->lock);
    }
    free(s->workers);
    free(s);
}

PLX_API plx_status plx_scheduler_create(plx_loaded_network *loaded, size_t worker_count,
                                        plx_scheduler **out_scheduler) {
    if (!loaded || !out_scheduler) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "scheduler: %s is NULL",
                                  loaded ? "out_scheduler" : "loaded network");
    }
    if (worker_count < 1 || worker_count > MAX_WORKERS) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "scheduler: worker_count %zu is outside 1..%d", worker_count,
                                  MAX_WORKERS);
    }
    plx_scheduler *s = calloc(1, sizeof *s);
    if (!s) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "scheduler: out of memory");
    }
    s->loaded = loaded;
    s->worker_count = worker_count;
    s->workers = calloc(worker_count, sizeof *s->workers);
    if (!s->workers) {
        teardown(s, false);
        return plxi_status_create(PLX_OUT_OF_MEMORY, "scheduler: out of memory");
    }
    for (size_t i = 0; i < worker_count; i++) {
        s->workers[i].scheduler = s;
        plx_status e =
            plx_loaded_network_create_working_memory(loaded, &s->workers[i].working_memory);
        if (e) {
            plx_status r = plxi_status_create(plx_status_get_code(e),
                                              "scheduler: cannot create the working memory of "
                                              "worker %zu: %s", i, plx_status_get_message(e));
            plx_status_free(e);
            teardown(s, false);
            return r;
        }
    }
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        teardown(s, false);
        return plxi_status_create(PLX_UNAVAILABLE, "scheduler: cannot create a mutex");
    }
    if (pthread_cond_init(&s->work, NULL) != 0) {
        pthread_mutex_destroy(&s->lock);
        teardown(s, false);
        return plxi_status_create(PLX_UNAVAILABLE, "scheduler: cannot create a condition "
                                                   "variable");
    }
    for (size_t i = 0; i < worker_count; i++) {
        int rc = pthread_create(&s->workers[i].thread, NULL, work, &s->workers[i]);
        if (rc != 0) {
            teardown(s, true);
            return plxi_status_create(PLX_UNAVAILABLE,
                                      "scheduler: cannot start worker thread %zu of %zu: %s", i,
                                      worker_count, strerror(rc));
        }
        s->workers[i].started = true;
    }
    *out_scheduler = s;
    return NULL;
}

/* Checks that `count` elements of `size` bytes starting at `total` fit in a
 * size_t; adds them. */
static bool add_array(size_t *total, size_t count, size_t size) {
    if (count > (SIZE_MAX - *total) / size) {
        return false;
    }
    *total += count * size;
    return true;
}

PLX_API plx_status plx_scheduler_submit(plx_scheduler *scheduler, const plx_execute_args *args,
                                        plx_priority priority, plx_completion_fn done,
                                        void *user_data) {
    if (!scheduler) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "scheduler is NULL");
    }
    if (!args || args->struct_size < PLX_STRUCT_SIZE_UPTO(plx_execute_args,
                                                          preimported_output_count)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "scheduler: execute args are NULL or too small (initialise "
                                  "with plx_execute_args_init)");
    }
    /* The enum's type may be unsigned: compare as an int. */
    int p = (int)priority;
    if (p < (int)PLX_PRIORITY_HIGH || p > (int)PLX_PRIORITY_LOW) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "scheduler: priority %d is not a plx_priority (0 high, 1 "
                                  "medium, 2 low)", p);
    }
    const struct {
        const void *array;
        size_t count;
        const char *name;
    } arrays[] = {
        {args->inputs, args->input_count, "inputs"},
        {args->outputs, args->output_count, "outputs"},
        {args->preimported_inputs, args->preimported_input_count, "preimported_inputs"},
        {args->preimported_outputs, args->preimported_output_count, "preimported_outputs"},
    };
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        if (arrays[i].count && !arrays[i].array) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "scheduler: execute args have %s NULL with a count of %zu",
                                      arrays[i].name, arrays[i].count);
        }
    }
    size_t bytes = 0;
    if (!add_array(&bytes, args->input_count, sizeof(plx_tensor_binding)) ||
        !add_array(&bytes, args->output_count, sizeof(plx_tensor_binding)) ||
        !add_array(&bytes, args->preimported_input_count, sizeof(uint32_t)) ||
        !add_array(&bytes, args->preimported_output_count, sizeof(uint32_t)) ||
        bytes > SIZE_MAX - sizeof(request)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "scheduler: execute args counts are too "
                                                        "large");
    }

    plx_scheduler *s = scheduler;
    pthread_mutex_lock(&s->lock);
    if (s->shutting_down) {
        pthread_mutex_unlock(&s->lock);
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "scheduler: shut down (plx_scheduler_destroy was called); the "
                                  "request was not queued");
    }
    request *r = s->recycled;
    if (r) {
        s->recycled = r->next;
        s->recycled_count--;
    }
    pthread_mutex_unlock(&s->lock);
    if (r && r->capacity < bytes) {
        free(r);
        r = NULL;
    }
    if (!r) {
        r = malloc(sizeof *r + bytes);
        if (!r) {
            return plxi_status_create(PLX_OUT_OF_MEMORY,
                                      "scheduler: out of memory for a request of %zu bytes",
                                      sizeof *r + bytes);
        }
        r->capacity = bytes;
    }
    r->next = NULL;
    r->done = done;
    r->user_data = user_data;
    /* Only the fields this version knows; the rest stay as init makes them. */
    plx_execute_args_init(&r->args);
    plx_tensor_binding *bindings = (plx_tensor_binding *)(void *)r->storage;
    uint32_t *ids = (uint32_t *)(void *)(bindings + args->input_count + args->output_count);
    if (args->input_count) {
        memcpy(bindings, args->inputs, args->input_count * sizeof *bindings);
        r->args.inputs = bindings;
    }
    r->args.input_count = args->input_count;
    if (args->output_count) {
        memcpy(bindings + args->input_count, args->outputs,
               args->output_count * sizeof *bindings);
        r->args.outputs = bindings + args->input_count;
    }
    r->args.output_count = args->output_count;
    if (args->preimported_input_count) {
        memcpy(ids, args->preimported_inputs, args->preimported_input_count * sizeof *ids);
        r->args.preimported_inputs = ids;
    }
    r->args.preimported_input_count = args->preimported_input_count;
    if (args->preimported_output_count) {
        memcpy(ids + args->preimported_input_count, args->preimported_outputs,
               args->preimported_output_count * sizeof *ids);
        r->args.preimported_outputs = ids + args->preimported_input_count;
    }
    r->args.preimported_output_count = args->preimported_output_count;

    r->submitted_ms = now_ms();
    pthread_mutex_lock(&s->lock);
    if (s->shutting_down) { /* destroy began while the request was filled */
        recycle(s, r);
        pthread_mutex_unlock(&s->lock);
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "scheduler: shut down (plx_scheduler_destroy was called); the "
                                  "request was not queued");
    }
    queue *q = &s->queues[p];
    if (q->tail) {
        q->tail->next = r;
    } else {
        q->head = r;
    }
    q->tail = r;
    s->queued++;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

PLX_API void plx_scheduler_destroy(plx_scheduler **scheduler) {
    if (!scheduler || !*scheduler) {
        return;
    }
    plx_scheduler *s = *scheduler;
    *scheduler = NULL;
    teardown(s, true);
}
