/* gpu_cuda: queued execution, CUDA Graphs, and the backend's
 * profiling events.
 *
 * A working memory's queue is one non-blocking CUDA stream. The host
 * enqueues a working memory's layers one by one and signals a fence where
 * it must wait (a tensor leaves the backend, the execution ends): the
 * layers between two signals are a segment. queue_signal records a CUDA
 * event after the segment, the fence; fence_wait is cudaEventSynchronize.
 * Fences of this instance that a workload must wait for become
 * cudaStreamWaitEvent on the queue's stream, issued at the enqueue.
 *
 * CUDA Graphs (option graphs, on by default). A working memory runs the
 * same segments execution after execution, so each is launched as a CUDA
 * graph instead of one launch per kernel:
 *   - the first time a segment is seen, its layers are launched one by one
 *     as they are enqueued, and the segment (its workloads in order) is
 *     remembered;
 *   - when an enqueue starts a segment whose first workload begins a
 *     remembered one, the launches are deferred to queue_signal (R-24 (3)
 *     allows work to run at any time up to the wait on a fence that covers
 *     it). There, if the deferred workloads are the remembered segment, it
 *     is captured (cudaStreamBeginCapture in thread-local mode, so that
 *     other working memories' threads are not affected), instantiated and
 *     launched; from then on its executable graph is replayed with one
 *     cudaGraphLaunch. A segment that turns out different is launched one
 *     by one and remembered in turn;
 *   - the graph holds the device pointers of the tensors it read and
 *     wrote. They change when the application binds other memory of its
 *     own to an input or output (zero copy): the pointers are compared at
 *     each replay, and on a change the segment is captured again and the
 *     executable graph updated in place (cudaGraphExecUpdate), or made
 *     anew when the update is refused;
 *   - a segment that cannot be captured (a library call that refuses
 *     capture) is launched one by one from then on, with one warning;
 *   - up to GPU_CUDA_QUEUE_GRAPHS segments per queue (a working memory
 *     whose execution alternates with another backend has several); the
 *     least recently used is dropped beyond that.
 * Segments of one layer gain nothing from a graph and run directly.
 *
 * Profiling: an execution with params->profile set runs without
 * graphs, its launches one by one, each between two timing CUDA events;
 * fence_wait hands the times of the work it covers to host->record_event.
 * The clock mapping: after the wait, an event recorded on an idle stream
 * of the queue's (`clock_stream`) and waited for gives the device time of
 * the host's clock reading taken right after; an event's host time is that
 * reading minus the elapsed device time from the event to it. The error is
 * the latency of that one wait (microseconds). Without profile no event is
 * created per launch.
 *
 * Checks: a workload whose launches raise a device flag to be read once
 * they complete (gpu_cuda_workload_has_check: gather's index out of
 * range) is noted at its enqueue; the wait on a fence that covers it
 * reads the flag, and the first failure, naming the layer, is the fence's
 * verdict, the same on every wait.
 *
 * Nothing allocates in the steady state: the arrays grow in the first
 * executions only, and fences come from the queue's free list. A fence
 * whose queue was destroyed first (R-24 (4) says the host destroys fences
 * first; a fence outliving its queue is still released correctly) is
 * orphaned: it keeps its event and reports no profiling events. A failure
 * while the work runs is the CUDA context's (sticky, reported by every
 * later call), so a fence reports it without naming a layer of its own: it
 * names the last layer enqueued before it. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"

/* Segments remembered per queue (see the top). */
#define GPU_CUDA_QUEUE_GRAPHS 16

/* A segment seen before: its workloads in order, the device pointers they
 * used when it was last captured, and its executable graph once captured
 * (NULL: seen once, or not capturable). */
typedef struct queue_segment {
    plx_workload **workloads;
    uint32_t count;
    const void **pointers;
    uint32_t pointer_count, pointer_cap;
    cudaGraphExec_t exec;
    bool uncapturable; /* capture failed once: launched one by one */
    uint64_t last_use; /* the queue's segment counter at its last run */
} queue_segment;

/* A launch timed for the profile: its events and names. The events are
 * made at the first profiled execution and reused after. */
typedef struct timed_launch {
    cudaEvent_t start, end;
    const char *name;  /* the workload's kind: static */
    const char *layer; /* plx_enqueue_params.layer_name: valid while the network is loaded */
} timed_launch;

struct plx_fence {
    plx_queue *queue;     /* NULL once orphaned */
    /* The verdict of the checks it covers, once waited on (R-24 (4): the
     * same on every wait). */
    bool waited;
    plx_status_code verdict;
    char verdict_message[512];
    plx_backend *backend; /* whose fence: enqueue_workload takes only its own */
    const plx_host *host;
    int device;
    cudaEvent_t event;
    const char *last_layer; /* the last layer enqueued before it, or NULL */
    uint32_t timed_upto;    /* the queue's timed launches it covers: [0, timed_upto) */
    uint32_t checks_upto;   /* the queue's checked workloads it covers */
    plx_fence *next, *prev; /* the queue's live list, or next in its free list */
};

/* A layer of the segment being enqueued. */
typedef struct pending_launch {
    plx_workload *workload;
    const char *layer; /* plx_enqueue_params.layer_name: valid while the network is loaded */
} pending_launch;

struct plx_queue {
    plx_factory *factory;
    cudaStream_t stream;
    const char *last_layer; /* plx_enqueue_params.layer_name: valid while the network is loaded */

    /* The segment being enqueued. */
    pending_launch *pending;
    uint32_t count, cap;
    bool deferred; /* its launches wait for queue_signal (a graph is expected) */
    bool profiled; /* its launches are timed: never a graph */

    bool graphs; /* option graphs */
    queue_segment segments[GPU_CUDA_QUEUE_GRAPHS];
    uint32_t segment_count;
    uint64_t segment_clock;
    const void **scratch; /* the pointers of a segment, compared before a replay */
    uint32_t scratch_cap;

    /* Workloads enqueued since the last wait whose device flag the wait
     * reads (gpu_cuda_workload_has_check: gather's index check). */
    plx_workload **checks;
    uint32_t check_count, check_cap;

    /* Profiling: launches timed since the last report. */
    timed_launch *timed;
    uint32_t timed_count, timed_cap;
    cudaStream_t clock_stream; /* made at the first profiled execution */
    cudaEvent_t clock_event;

    plx_fence *live;  /* fences signalled and not destroyed */
    plx_fence *spare; /* destroyed fences, for the next signals */
};

/* ------------------------------------------------------------------------ */
/* Growing arrays (first executions only)                                     */
/* ------------------------------------------------------------------------ */

/* Makes room for `need` elements of `size` bytes in *array of capacity
 * *cap; false when out of memory (the array is unchanged then). */
static bool grow(const plx_host *host, void **array, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) {
        return true;
    }
    uint32_t n = *cap ? *cap : 16;
    while (n < need) {
        n *= 2;
    }
    void *p = host->alloc(host, (size_t)n * size, 0);
    if (!p) {
        return false;
    }
    if (*array) {
        memcpy(p, *array, (size_t)*cap * size);
        host->free(host, *array);
    }
    memset((char *)p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
    *array = p;
    *cap = n;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Queues                                                                     */
/* ------------------------------------------------------------------------ */

plx_status gpu_cuda_create_queue(plx_factory *f, const plx_queue_params *params,
                                 plx_queue **out_queue) {
    (void)params;
    const plx_host *host = f->host;
    plx_queue *q = host->alloc(host, sizeof *q, 0);
    if (!q) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate the queue");
    }
    memset(q, 0, sizeof *q);
    q->factory = f;
    q->graphs = f->backend->graphs;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking);
    }
    if (rc != cudaSuccess) {
        host->free(host, q);
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamCreateWithFlags (queue)");
    }
    *out_queue = q;
    return NULL;
}

static void forget_segment(const plx_host *host, queue_segment *s) {
    if (s->exec) {
        cudaGraphExecDestroy(s->exec);
    }
    host->free(host, s->workloads);
    host->free(host, s->pointers);
    memset(s, 0, sizeof *s);
}

/* The host destroys a queue once its work was waited on; should it not
 * have been (a failed queue_signal), the stream's work is finished first. */
void gpu_cuda_destroy_queue(plx_queue *q) {
    if (!q) {
        return;
    }
    const plx_host *host = q->factory->host;
    cudaSetDevice(q->factory->device);
    cudaStreamSynchronize(q->stream);
    for (uint32_t i = 0; i < q->segment_count; i++) {
        forget_segment(host, &q->segments[i]);
    }
    for (uint32_t i = 0; i < q->timed_cap; i++) {
        if (q->timed[i].start) {
            cudaEventDestroy(q->timed[i].start);
            cudaEventDestroy(q->timed[i].end);
        }
    }
    if (q->clock_event) {
        cudaEventDestroy(q->clock_event);
    }
    if (q->clock_stream) {
        cudaStreamDestroy(q->clock_stream);
    }
    for (plx_fence *fence = q->live; fence; fence = fence->next) {
        fence->queue = NULL; /* orphaned: destroy_fence frees it */
    }
    while (q->spare) {
        plx_fence *fence = q->spare;
        q->spare = fence->next;
        cudaEventDestroy(fence->event);
        host->free(host, fence);
    }
    cudaStreamDestroy(q->stream);
    host->free(host, q->pending);
    host->free(host, q->scratch);
    host->free(host, q->checks);
    host->free(host, q->timed);
    host->free(host, q);
}

/* ------------------------------------------------------------------------ */
/* Launching                                                                  */
/* ------------------------------------------------------------------------ */

/* The status of a launch that failed, naming its layer. */
static plx_status layer_failure(const plx_host *host, const char *layer, plx_status s) {
    plx_status named = host->status_create(host, host->status_code(host, s), "layer '%s': %s",
                                           layer, host->status_message(host, s));
    host->status_free(host, s);
    return named;
}

/* Launches one workload on the queue's stream, between two timing events
 * when the segment is profiled. */
static plx_status launch(plx_queue *q, plx_workload *w, const char *layer) {
    const plx_host *host = q->factory->host;
    timed_launch *t = NULL;
    if (q->profiled) {
        if (!grow(host, (void **)&q->timed, &q->timed_cap, q->timed_count + 1, sizeof *q->timed)) {
            return host->status_create(host, PLX_OUT_OF_MEMORY,
                                       "cannot allocate the profile's launch records");
        }
        t = &q->timed[q->timed_count];
        if (!t->start) {
            cudaError_t rc = cudaEventCreate(&t->start);
            if (rc == cudaSuccess) {
                rc = cudaEventCreate(&t->end);
                if (rc != cudaSuccess) {
                    cudaEventDestroy(t->start);
                }
            }
            if (rc != cudaSuccess) {
                t->start = NULL;
                return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaEventCreate (profile)");
            }
        }
        cudaError_t rc = cudaEventRecord(t->start, q->stream);
        if (rc != cudaSuccess) {
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaEventRecord (profile)");
        }
    }
    plx_status s = gpu_cuda_workload_enqueue(w, q->stream);
    if (s) {
        return s;
    }
    if (t) {
        cudaError_t rc = cudaEventRecord(t->end, q->stream);
        if (rc != cudaSuccess) {
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaEventRecord (profile)");
        }
        t->name = gpu_cuda_workload_name(w);
        t->layer = layer;
        q->timed_count++;
    }
    return NULL;
}

/* Launches the deferred segment one by one; the first failure, naming its
 * layer. */
static plx_status launch_all(plx_queue *q) {
    for (uint32_t i = 0; i < q->count; i++) {
        plx_status s = launch(q, q->pending[i].workload, q->pending[i].layer);
        if (s) {
            return layer_failure(q->factory->host, q->pending[i].layer, s);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Segments and graphs                                                        */
/* ------------------------------------------------------------------------ */

static queue_segment *segment_starting_with(plx_queue *q, const plx_workload *w) {
    for (uint32_t i = 0; i < q->segment_count; i++) {
        if (q->segments[i].count > 0 && q->segments[i].workloads[0] == w &&
            !q->segments[i].uncapturable) {
            return &q->segments[i];
        }
    }
    return NULL;
}

/* The remembered segment equal to the one being enqueued, or NULL. */
static queue_segment *segment_equal(plx_queue *q) {
    for (uint32_t i = 0; i < q->segment_count; i++) {
        queue_segment *s = &q->segments[i];
        uint32_t k = 0;
        while (k < q->count && k < s->count && s->workloads[k] == q->pending[k].workload) {
            k++;
        }
        if (k == q->count && k == s->count) {
            return s;
        }
    }
    return NULL;
}

/* Remembers the segment being enqueued; a slot taken from the least
 * recently used one when all are taken. NULL when out of memory: the
 * segment is then simply not remembered. */
static queue_segment *remember_segment(plx_queue *q) {
    const plx_host *host = q->factory->host;
    queue_segment *s;
    if (q->segment_count < GPU_CUDA_QUEUE_GRAPHS) {
        s = &q->segments[q->segment_count];
    } else {
        s = &q->segments[0];
        for (uint32_t i = 1; i < q->segment_count; i++) {
            if (q->segments[i].last_use < s->last_use) {
                s = &q->segments[i];
            }
        }
        forget_segment(host, s);
    }
    s->workloads = host->alloc(host, q->count * sizeof *s->workloads, 0);
    if (!s->workloads) {
        return NULL; /* an empty slot (count 0), which nothing matches */
    }
    for (uint32_t i = 0; i < q->count; i++) {
        s->workloads[i] = q->pending[i].workload;
    }
    s->count = q->count;
    s->last_use = q->segment_clock;
    if (s == &q->segments[q->segment_count]) {
        q->segment_count++;
    }
    return s;
}

/* Collects the device pointers the segment's workloads use now into
 * `pointers` (grown as needed); false when out of memory. */
static bool collect_pointers(const plx_host *host, plx_workload *const *workloads, uint32_t count,
                             const void ***pointers, uint32_t *pointer_count, uint32_t *cap) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        for (;;) {
            uint32_t room = *cap - n;
            uint32_t used = gpu_cuda_workload_pointers(workloads[i], *pointers + n, room);
            if (used <= room) {
                n += used;
                break;
            }
            if (!grow(host, (void **)pointers, cap, n + used, sizeof **pointers)) {
                return false;
            }
        }
    }
    *pointer_count = n;
    return true;
}

/* Whether the segment's workloads use the pointers it was captured with
 * (read into the queue's scratch list, grown at the capture to hold them,
 * so that this allocates nothing). */
static bool pointers_unchanged(plx_queue *q, const queue_segment *s) {
    uint32_t count = 0;
    return collect_pointers(q->factory->host, s->workloads, s->count, &q->scratch, &count,
                            &q->scratch_cap) &&
           count == s->pointer_count &&
           memcmp(q->scratch, s->pointers, count * sizeof *q->scratch) == 0;
}

/* Captures the segment's launches into a graph and makes or updates its
 * executable graph. On failure nothing was launched and the stream is out
 * of capture; the status says what failed. */
static plx_status capture_segment(plx_queue *q, queue_segment *s) {
    const plx_host *host = q->factory->host;
    /* The pointers are those of the capture about to be made; until it
     * succeeds, none (so that a failed capture is never taken for a graph
     * of the new pointers). */
    uint32_t pointer_count = 0;
    s->pointer_count = 0;
    if (!collect_pointers(host, s->workloads, s->count, &s->pointers, &pointer_count,
                          &s->pointer_cap)) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cannot allocate the graph's pointer list");
    }
    if (!grow(host, (void **)&q->scratch, &q->scratch_cap, pointer_count,
              sizeof *q->scratch)) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cannot allocate the graph's pointer list");
    }
    cudaError_t rc = cudaStreamBeginCapture(q->stream, cudaStreamCaptureModeThreadLocal);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamBeginCapture");
    }
    plx_status failed = NULL;
    for (uint32_t i = 0; i < s->count && !failed; i++) {
        failed = gpu_cuda_workload_enqueue(s->workloads[i], q->stream);
        if (failed) {
            failed = layer_failure(host, q->pending[i].layer, failed);
        }
    }
    cudaGraph_t graph = NULL;
    rc = cudaStreamEndCapture(q->stream, &graph); /* ends it whatever happened */
    if (failed || rc != cudaSuccess) {
        if (graph) {
            cudaGraphDestroy(graph);
        }
        cudaGetLastError(); /* a capture's error is not the context's: clear it */
        return failed ? failed : gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamEndCapture");
    }
    if (s->exec) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(s->exec, graph, &info) != cudaSuccess) {
            cudaGetLastError();
            cudaGraphExecDestroy(s->exec);
            s->exec = NULL;
        }
    }
    if (!s->exec) {
        rc = cudaGraphInstantiate(&s->exec, graph, 0);
        if (rc != cudaSuccess) {
            s->exec = NULL;
            cudaGraphDestroy(graph);
            cudaGetLastError();
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaGraphInstantiate");
        }
    }
    cudaGraphDestroy(graph);
    s->pointer_count = pointer_count;
    return NULL;
}

/* Runs the deferred segment: as a graph when it is the remembered one
 * (captured now if it was not yet, or again if its pointers changed),
 * else one by one. */
static plx_status run_deferred(plx_queue *q) {
    const plx_host *host = q->factory->host;
    queue_segment *s = segment_equal(q);
    if (!s || s->uncapturable) {
        plx_status st = launch_all(q);
        if (!st && !s && q->count >= 2) {
            remember_segment(q);
        }
        return st;
    }
    s->last_use = q->segment_clock;
    if (!s->exec || !pointers_unchanged(q, s)) {
        plx_status st = capture_segment(q, s);
        if (st) {
            /* Launched one by one: if that fails too, the failure is the
             * work's, not the capture's. */
            plx_status direct = launch_all(q);
            if (direct) {
                host->status_free(host, st);
                return direct;
            }
            host->log(host, PLX_LOG_WARN,
                      "gpu_cuda: a segment of %u layers from '%s' cannot be captured as a CUDA "
                      "graph; it runs layer by layer: %s",
                      s->count, q->pending[0].layer, host->status_message(host, st));
            host->status_free(host, st);
            if (s->exec) {
                cudaGraphExecDestroy(s->exec);
                s->exec = NULL;
            }
            s->uncapturable = true;
            return NULL;
        }
    }
    cudaError_t rc = cudaGraphLaunch(s->exec, q->stream);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_INTERNAL,
                                "cudaGraphLaunch (the %u layers from '%s')", s->count,
                                q->pending[0].layer);
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Enqueue and signal                                                         */
/* ------------------------------------------------------------------------ */

plx_status gpu_cuda_enqueue_workload(plx_queue *q, const plx_enqueue_params *p) {
    plx_factory *f = q->factory;
    const plx_host *host = f->host;
    if (!p || p->struct_size < PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, layer_name) ||
        !p->workload) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "enqueue_workload: no workload, or parameters of %u bytes",
                                   p ? p->struct_size : 0u);
    }
    bool profile = p->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, profile) &&
                   p->profile && f->profiling;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaSetDevice(%d)", f->device);
    }
    uint32_t waits = p->wait_fences ? p->wait_fence_count : 0;
    for (uint32_t i = 0; i < waits; i++) {
        const plx_fence *fence = p->wait_fences[i];
        if (!fence || fence->backend != f->backend) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "enqueue_workload: wait fence %u is not this gpu_cuda "
                                       "instance's",
                                       i);
        }
    }
    bool checked = gpu_cuda_workload_has_check(p->workload);
    if (!grow(host, (void **)&q->pending, &q->cap, q->count + 1, sizeof *q->pending) ||
        (checked && !grow(host, (void **)&q->checks, &q->check_cap, q->check_count + 1,
                          sizeof *q->checks))) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate the queue's list");
    }
    if (q->count == 0) {
        /* A new segment: deferred when a remembered segment starts with
         * this workload and nothing is profiled. */
        q->profiled = profile;
        q->deferred = q->graphs && !profile && segment_starting_with(q, p->workload);
    }
    /* The waits go on the stream now: deferred launches come after them,
     * which orders them after the fences too (only later, never sooner). */
    for (uint32_t i = 0; i < waits; i++) {
        rc = cudaStreamWaitEvent(q->stream, p->wait_fences[i]->event, 0);
        if (rc != cudaSuccess) {
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamWaitEvent");
        }
    }
    if (!q->deferred) {
        plx_status s = launch(q, p->workload, p->layer_name);
        if (s) {
            return s;
        }
    }
    q->pending[q->count].workload = p->workload;
    q->pending[q->count].layer = p->layer_name;
    q->count++;
    if (checked) {
        q->checks[q->check_count++] = p->workload;
    }
    q->last_layer = p->layer_name;
    return NULL;
}

/* Runs what the segment deferred, remembers a segment seen for the first
 * time, and starts the next segment. */
static plx_status end_segment(plx_queue *q) {
    plx_status s = NULL;
    q->segment_clock++;
    if (q->deferred) {
        s = run_deferred(q);
    } else if (q->graphs && !q->profiled && q->count >= 2) {
        queue_segment *seen = segment_equal(q);
        if (seen) {
            seen->last_use = q->segment_clock;
        } else {
            remember_segment(q); /* out of memory: simply not remembered */
        }
    }
    q->count = 0;
    q->deferred = false;
    q->profiled = false;
    return s;
}

plx_status gpu_cuda_queue_signal(plx_queue *q, plx_fence **out_fence) {
    plx_factory *f = q->factory;
    const plx_host *host = f->host;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc != cudaSuccess) {
        q->count = 0;
        q->deferred = false;
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaSetDevice(%d)", f->device);
    }
    plx_status s = end_segment(q);
    if (s) {
        return s;
    }
    plx_fence *fence = q->spare;
    if (fence) {
        q->spare = fence->next;
    } else {
        fence = host->alloc(host, sizeof *fence, 0);
        if (!fence) {
            return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate a fence");
        }
        memset(fence, 0, sizeof *fence);
        rc = cudaEventCreateWithFlags(&fence->event, cudaEventDisableTiming);
        if (rc != cudaSuccess) {
            host->free(host, fence);
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaEventCreateWithFlags (fence)");
        }
    }
    fence->queue = q;
    fence->backend = f->backend;
    fence->host = host;
    fence->device = f->device;
    fence->last_layer = q->last_layer;
    fence->timed_upto = q->timed_count;
    fence->checks_upto = q->check_count;
    fence->waited = false;
    rc = cudaEventRecord(fence->event, q->stream);
    if (rc != cudaSuccess) {
        fence->next = q->spare;
        q->spare = fence;
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "recording a fence (cudaEventRecord)");
    }
    fence->prev = NULL;
    fence->next = q->live;
    if (q->live) {
        q->live->prev = fence;
    }
    q->live = fence;
    *out_fence = fence;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Fences and the profile                                                     */
/* ------------------------------------------------------------------------ */

/* Hands the times of the launches the fence covers, now complete, to the
 * host, and recycles their events once every timed launch was
 * reported. */
static void report_timed(plx_queue *q, uint32_t upto) {
    plx_factory *f = q->factory;
    const plx_host *host = f->host;
    if (upto == 0) {
        return;
    }
    if (!q->clock_stream) {
        if (cudaStreamCreateWithFlags(&q->clock_stream, cudaStreamNonBlocking) != cudaSuccess) {
            q->clock_stream = NULL;
        } else if (cudaEventCreate(&q->clock_event) != cudaSuccess) {
            cudaStreamDestroy(q->clock_stream);
            q->clock_stream = NULL;
            q->clock_event = NULL;
        }
    }
    /* The clock mapping: an event on the idle clock stream completes at
     * once; the host's clock read right after its wait is its host time. */
    uint64_t host_now = 0;
    bool mapped = q->clock_stream && cudaEventRecord(q->clock_event, q->clock_stream) ==
                                         cudaSuccess &&
                  cudaEventSynchronize(q->clock_event) == cudaSuccess;
    if (mapped) {
        host_now = host->now_ns(host);
    }
    for (uint32_t i = 0; mapped && i < upto; i++) {
        const timed_launch *t = &q->timed[i];
        float before_ms = 0.0f, duration_ms = 0.0f;
        if (cudaEventElapsedTime(&before_ms, t->start, q->clock_event) != cudaSuccess ||
            cudaEventElapsedTime(&duration_ms, t->start, t->end) != cudaSuccess) {
            continue;
        }
        uint64_t before_ns = (uint64_t)((double)before_ms * 1e6);
        plx_profile_event e;
        memset(&e, 0, sizeof e);
        e.struct_size = PLX_STRUCT_SIZE_UPTO(plx_profile_event, clock_sync_host_ns);
        e.network_id = f->network_id;
        e.name = t->name;
        e.category = "kernel";
        e.layer = t->layer;
        e.start_ns = host_now > before_ns ? host_now - before_ns : 0;
        e.duration_ns = (uint64_t)((double)duration_ms * 1e6);
        host->record_event(host, &e); /* start_ns is on the host's clock: sync pair 0 */
    }
    cudaGetLastError(); /* an elapsed time refused is not the context's error */
    /* Launches after `upto` stay for a later wait. */
    uint32_t rest = q->timed_count - upto;
    for (uint32_t i = 0; i < rest; i++) {
        timed_launch t = q->timed[i];
        q->timed[i] = q->timed[upto + i];
        q->timed[upto + i] = t;
    }
    q->timed_count = rest;
    for (plx_fence *fence = q->live; fence; fence = fence->next) {
        fence->timed_upto = fence->timed_upto > upto ? fence->timed_upto - upto : 0;
    }
}

/* Reads the flags of the checked workloads the fence covers, now
 * complete, into the fence's verdict (the first failure), and forgets
 * them. */
static void read_checks(plx_queue *q, plx_fence *fence) {
    const plx_host *host = q->factory->host;
    uint32_t upto = fence->checks_upto;
    for (uint32_t i = 0; i < upto; i++) {
        plx_status s = gpu_cuda_workload_check(q->checks[i]);
        if (s && fence->verdict == PLX_OK) {
            fence->verdict = host->status_code(host, s);
            snprintf(fence->verdict_message, sizeof fence->verdict_message, "%s",
                     host->status_message(host, s));
        }
        if (s) {
            host->status_free(host, s);
        }
    }
    uint32_t rest = q->check_count - upto;
    memmove(q->checks, q->checks + upto, rest * sizeof *q->checks);
    q->check_count = rest;
    for (plx_fence *f = q->live; f; f = f->next) {
        f->checks_upto = f->checks_upto > upto ? f->checks_upto - upto : 0;
    }
}

/* The verdict of a fence that was waited on, as a new status (or NULL). */
static plx_status fence_verdict(const plx_fence *fence) {
    return fence->verdict == PLX_OK ? NULL
                                    : fence->host->status_create(fence->host, fence->verdict,
                                                                 "%s", fence->verdict_message);
}

plx_status gpu_cuda_fence_wait(plx_fence *fence) {
    if (fence->waited) {
        return fence_verdict(fence);
    }
    cudaError_t rc = cudaSetDevice(fence->device);
    if (rc == cudaSuccess) {
        rc = cudaEventSynchronize(fence->event);
    }
    if (rc == cudaSuccess) {
        fence->waited = true;
        fence->verdict = PLX_OK;
        if (fence->queue && fence->timed_upto) {
            report_timed(fence->queue, fence->timed_upto);
        }
        if (fence->queue && fence->checks_upto) {
            read_checks(fence->queue, fence);
        }
        return fence_verdict(fence);
    }
    if (fence->last_layer) {
        return gpu_cuda_failure(fence->host, rc, PLX_INTERNAL,
                                "the device failed in the work up to layer '%s'",
                                fence->last_layer);
    }
    return gpu_cuda_failure(fence->host, rc, PLX_INTERNAL, "the device failed");
}

plx_status gpu_cuda_fence_query(plx_fence *fence, bool *out_signalled) {
    cudaError_t rc = cudaSetDevice(fence->device);
    if (rc == cudaSuccess) {
        rc = cudaEventQuery(fence->event);
    }
    if (rc == cudaSuccess || rc == cudaErrorNotReady) {
        *out_signalled = rc == cudaSuccess;
        return NULL;
    }
    /* The work failed: signalled, and fence_wait gives the verdict. */
    *out_signalled = true;
    return NULL;
}

/* A live fence goes back to its queue's free list with its event; an
 * orphan is freed. */
void gpu_cuda_destroy_fence(plx_fence *fence) {
    if (!fence) {
        return;
    }
    plx_queue *q = fence->queue;
    if (!q) {
        cudaSetDevice(fence->device);
        cudaEventDestroy(fence->event);
        fence->host->free(fence->host, fence);
        return;
    }
    if (fence->prev) {
        fence->prev->next = fence->next;
    } else {
        q->live = fence->next;
    }
    if (fence->next) {
        fence->next->prev = fence->prev;
    }
    fence->queue = NULL;
    fence->prev = NULL;
    fence->next = q->spare;
    q->spare = fence;
}
