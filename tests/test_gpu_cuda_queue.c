/* gpu_cuda's queue (gpu_cuda/cuda_queue.c: queued execution, CUDA Graphs,
 * profiling events) on its own, on any machine: the file is built here
 * against the test's model of the CUDA runtime instead of the real one, and
 * against workloads of the test's own, so that what the queue decides can be
 * checked call by call without a GPU: which segments run one launch at a
 * time, which are captured, replayed, captured again when their memory
 * changed, or given up on; what a profiled execution reports; how fences
 * and waits behave; and that the steady state allocates nothing.
 *
 * The model: a stream runs what is launched on it at once, in order,
 * appending "<workload>:<pointer>" to the `ran` log, or, while it captures,
 * appends the launch (with its pointer as it is then) to the graph being
 * captured. An executable graph runs its launches with the pointers they
 * were captured with, so that a replay with stale pointers shows in `ran`.
 * Every object the queue makes is counted, so that leaks show.
 *
 * tests/test_gpu_cuda.c and test_ops_network (ops_gpu_cuda) run the real
 * backend on a device. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "cuda_backend.h"
#include "test_host_table.h"

/* ---- the model of the CUDA runtime ---------------------------------------- */

#define MAX_LAUNCHES 64

typedef struct launch_rec {
    int id;
    const void *ptr;
} launch_rec;

struct CUgraph_st {
    launch_rec launches[MAX_LAUNCHES];
    int count;
};

struct CUgraphExec_st {
    launch_rec launches[MAX_LAUNCHES];
    int count;
};

struct CUstream_st {
    bool capturing;
    bool invalidated; /* a call refused capture: EndCapture fails */
    struct CUgraph_st *graph;
};

struct CUevent_st {
    uint64_t time; /* the model's device clock when it was recorded */
    bool timing;
};

static char ran[4096];       /* what the "device" ran, in order */
static char calls[4096];     /* the graph calls: B(egin) E(nd) I(nstantiate) U(pdate) G(raph launch) W(ait) */
static uint64_t device_clock; /* advanced 1000 ns per launch */
static int live_streams, live_events, live_graphs, live_execs;
static int events_created;
static bool refuse_update;

static void note(char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(char *log, const char *fmt, ...) {
    size_t len = strlen(log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(log + len, 4096 - len, fmt, ap);
    va_end(ap);
}

static void launched(int id); /* the workload's own effect: its flag */

static void run_launch(int id, const void *ptr) {
    note(ran, "%d:%p ", id, ptr);
    device_clock += 1000;
    launched(id);
}

cudaError_t cudaSetDevice(int device) {
    (void)device;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
    (void)flags;
    *stream = calloc(1, sizeof **stream);
    live_streams++;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    free(stream);
    live_streams--;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    (void)stream;
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    (void)stream;
    (void)flags;
    cr_assert(not(zero(ptr, event)));
    note(calls, "W ");
    return cudaSuccess;
}

static cudaError_t make_event(cudaEvent_t *event, bool timing) {
    *event = calloc(1, sizeof **event);
    (*event)->timing = timing;
    live_events++;
    events_created++;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
    return make_event(event, true);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    return make_event(event, !(flags & cudaEventDisableTiming));
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    free(event);
    live_events--;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    cr_assert(not(stream->capturing), "an event recorded into a capture");
    event->time = device_clock;
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    (void)event;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
    (void)event;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    cr_assert(start->timing && end->timing, "elapsed time of an event without timing");
    *ms = (float)((double)end->time - (double)start->time) / 1e6f;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    cr_assert(eq(int, (int)mode, (int)cudaStreamCaptureModeThreadLocal),
              "capture must not stop other threads' calls");
    cr_assert(not(stream->capturing));
    stream->capturing = true;
    stream->invalidated = false;
    stream->graph = calloc(1, sizeof *stream->graph);
    live_graphs++;
    note(calls, "B ");
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
    cr_assert(stream->capturing);
    stream->capturing = false;
    note(calls, "E ");
    if (stream->invalidated) {
        free(stream->graph);
        live_graphs--;
        stream->graph = NULL;
        *graph = NULL;
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = stream->graph;
    stream->graph = NULL;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    free(graph);
    live_graphs--;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags) {
    (void)flags;
    *exec = calloc(1, sizeof **exec);
    memcpy((*exec)->launches, graph->launches, sizeof graph->launches);
    (*exec)->count = graph->count;
    live_execs++;
    note(calls, "I ");
    return cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                cudaGraphExecUpdateResultInfo *info) {
    memset(info, 0, sizeof *info);
    note(calls, "U ");
    if (refuse_update || graph->count != exec->count) {
        return cudaErrorGraphExecUpdateFailure;
    }
    memcpy(exec->launches, graph->launches, sizeof graph->launches);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    free(exec);
    live_execs--;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    cr_assert(not(stream->capturing));
    note(calls, "G ");
    for (int i = 0; i < exec->count; i++) {
        run_launch(exec->launches[i].id, exec->launches[i].ptr);
    }
    return cudaSuccess;
}

/* ---- the rest of the backend the queue calls ---------------------------- */

/* A workload of the test's: one launch reading `ptr`. */
struct plx_workload {
    int id;
    const void *ptr;
    bool refuses_capture; /* like a library call that cannot be captured */
    bool fails;           /* its launch fails */
    bool checked;         /* it raises a flag read after the wait */
    bool flag;            /* the flag, as the last launch left it */
    bool flag_next;       /* what its next launch leaves in the flag */
};

plx_status gpu_cuda_workload_enqueue(plx_workload *w, cudaStream_t stream) {
    const plx_host *host = &th_host;
    if (w->fails) {
        return host->status_create(host, PLX_INTERNAL, "launch: the model's failure");
    }
    if (stream->capturing) {
        if (w->refuses_capture) {
            stream->invalidated = true;
            return host->status_create(host, PLX_INTERNAL,
                                       "a call not permitted while capturing");
        }
        struct CUgraph_st *g = stream->graph;
        cr_assert(lt(int, g->count, MAX_LAUNCHES));
        g->launches[g->count].id = w->id;
        g->launches[g->count].ptr = w->ptr;
        g->count++;
        return NULL;
    }
    run_launch(w->id, w->ptr);
    return NULL;
}

static plx_workload *model_workloads; /* the fixtures' work[] */

static void launched(int id) {
    model_workloads[id].flag = model_workloads[id].flag_next;
}

bool gpu_cuda_workload_has_check(const plx_workload *w) {
    return w->checked;
}

plx_status gpu_cuda_workload_check(plx_workload *w) {
    return w->flag ? th_host.status_create(&th_host, PLX_INVALID_ARGUMENT,
                                           "layer 'l%d': an index is out of range", w->id)
                   : NULL;
}

uint32_t gpu_cuda_workload_pointers(const plx_workload *w, const void **out, uint32_t cap) {
    if (cap > 0) {
        out[0] = w->ptr;
    }
    return 1;
}

const char *gpu_cuda_workload_name(const plx_workload *w) {
    (void)w;
    return "model kernel";
}

const char *cudaGetErrorString(cudaError_t rc) {
    return rc == cudaSuccess ? "no error" : "the model's error";
}

const char *cudaGetErrorName(cudaError_t rc) {
    static char name[32];
    snprintf(name, sizeof name, "error %d", (int)rc);
    return name;
}

/* ---- fixtures --------------------------------------------------------------- */

static plx_backend backend;
static plx_factory factory;
static plx_workload work[8];
static const char *const names[8] = {"l0", "l1", "l2", "l3", "l4", "l5", "l6", "l7"};
static char memory[8][16]; /* what the workloads' pointers point at */

static void setup(void) {
    memset(&backend, 0, sizeof backend);
    backend.host = &th_host;
    backend.queued = true;
    backend.graphs = true;
    memset(&factory, 0, sizeof factory);
    factory.backend = &backend;
    factory.host = &th_host;
    factory.network_id = 7;
    factory.profiling = true;
    model_workloads = work;
    for (int i = 0; i < 8; i++) {
        memset(&work[i], 0, sizeof work[i]);
        work[i].id = i;
        work[i].ptr = memory[i];
    }
    ran[0] = calls[0] = '\0';
    device_clock = 0;
    refuse_update = false;
    th_reset();
}

static void teardown(void) {
    cr_assert(eq(int, live_streams, 0), "%d streams left", live_streams);
    cr_assert(eq(int, live_events, 0), "%d events left", live_events);
    cr_assert(eq(int, live_graphs, 0), "%d graphs left", live_graphs);
    cr_assert(eq(int, live_execs, 0), "%d executable graphs left", live_execs);
    cr_assert(eq(int, th_live_allocations, 0), "%d allocations left", th_live_allocations);
}

TestSuite(gpu_cuda_queue, .init = setup, .fini = teardown);

#define OKS(expr)                                                                          \
    do {                                                                                   \
        plx_status s_ = (expr);                                                            \
        cr_assert(zero(ptr, s_), "%s: %s", #expr, s_ ? s_->message : "");                 \
    } while (0)

static plx_queue *make_queue(void) {
    plx_queue_params qp = {sizeof qp, 7};
    plx_queue *q = NULL;
    OKS(gpu_cuda_create_queue(&factory, &qp, &q));
    return q;
}

static plx_status enqueue_ex(plx_queue *q, int w, bool profile, plx_fence *const *waits,
                             uint32_t wait_count) {
    plx_enqueue_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.workload = &work[w];
    p.wait_fences = waits;
    p.wait_fence_count = wait_count;
    p.layer_name = names[w];
    p.profile = profile;
    return gpu_cuda_enqueue_workload(q, &p);
}

/* Enqueues the workloads listed (-1 ends the list), signals and waits. */
static void run_segment(plx_queue *q, bool profile, const int *ids) {
    for (int i = 0; ids[i] >= 0; i++) {
        OKS(enqueue_ex(q, ids[i], profile, NULL, 0));
    }
    plx_fence *fence = NULL;
    OKS(gpu_cuda_queue_signal(q, &fence));
    OKS(gpu_cuda_fence_wait(fence));
    gpu_cuda_destroy_fence(fence);
}

/* What `ran` must read after the workloads listed ran with their pointers. */
static const char *expected(const int *ids) {
    static char buf[4096];
    buf[0] = '\0';
    for (int i = 0; ids[i] >= 0; i++) {
        note(buf, "%d:%p ", ids[i], work[ids[i]].ptr);
    }
    return buf;
}

static void clear_logs(void) {
    ran[0] = calls[0] = '\0';
}

static const int abc[] = {0, 1, 2, -1};

/* ---- tests ------------------------------------------------------------------- */

/* First run: launched one by one as enqueued. Second: captured, then one
 * graph launch. After that: the graph replayed, nothing captured. */
Test(gpu_cuda_queue, a_segment_is_captured_at_its_second_run_and_replayed_after) {
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    cr_assert(eq(str, ran, (char *)expected(abc)));
    cr_assert(eq(str, calls, ""), "first run: %s", calls);
    clear_logs();
    run_segment(q, false, abc);
    cr_assert(eq(str, ran, (char *)expected(abc)));
    cr_assert(eq(str, calls, "B E I G "), "second run: %s", calls);
    for (int round = 0; round < 3; round++) {
        clear_logs();
        run_segment(q, false, abc);
        cr_assert(eq(str, ran, (char *)expected(abc)));
        cr_assert(eq(str, calls, "G "), "replay: %s", calls);
    }
    gpu_cuda_destroy_queue(q);
}

/* Launches are deferred only when a graph is expected: the enqueue of a
 * segment seen before does not run it before the signal. */
Test(gpu_cuda_queue, deferred_launches_run_at_the_signal) {
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    clear_logs();
    for (int i = 0; i < 3; i++) {
        OKS(enqueue_ex(q, i, false, NULL, 0));
    }
    cr_assert(eq(str, ran, ""), "ran before the signal: %s", ran);
    plx_fence *fence = NULL;
    OKS(gpu_cuda_queue_signal(q, &fence));
    cr_assert(eq(str, ran, (char *)expected(abc)));
    OKS(gpu_cuda_fence_wait(fence));
    gpu_cuda_destroy_fence(fence);
    gpu_cuda_destroy_queue(q);
}

/* An application binding other memory (zero copy) changes a pointer: the
 * replay must not use the old one. The segment is captured again and the
 * executable graph updated; when the update is refused, made anew. */
Test(gpu_cuda_queue, a_changed_pointer_is_captured_again) {
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    run_segment(q, false, abc);
    clear_logs();
    work[1].ptr = memory[5];
    run_segment(q, false, abc);
    cr_assert(eq(str, ran, (char *)expected(abc)), "stale pointer replayed");
    cr_assert(eq(str, calls, "B E U G "), "%s", calls);
    clear_logs();
    run_segment(q, false, abc);
    cr_assert(eq(str, calls, "G "), "%s", calls);
    clear_logs();
    refuse_update = true;
    work[2].ptr = memory[6];
    run_segment(q, false, abc);
    cr_assert(eq(str, ran, (char *)expected(abc)));
    cr_assert(eq(str, calls, "B E U I G "), "%s", calls);
    gpu_cuda_destroy_queue(q);
}

/* A segment that cannot be captured runs one by one, with one warning, and
 * is not tried again. */
Test(gpu_cuda_queue, a_segment_that_refuses_capture_runs_layer_by_layer) {
    work[1].refuses_capture = true;
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    clear_logs();
    run_segment(q, false, abc);
    cr_assert(eq(str, ran, (char *)expected(abc)), "%s", ran);
    cr_assert(eq(str, calls, "B E "), "%s", calls);
    cr_assert(eq(u32, th_warning_count, 1));
    cr_assert(not(zero(ptr, strstr(th_last_warning, "cannot be captured"))), "%s",
              th_last_warning);
    cr_assert(not(zero(ptr, strstr(th_last_warning, "'l0'"))), "%s", th_last_warning);
    for (int round = 0; round < 2; round++) {
        clear_logs();
        run_segment(q, false, abc);
        cr_assert(eq(str, ran, (char *)expected(abc)));
        cr_assert(eq(str, calls, ""), "%s", calls);
    }
    cr_assert(eq(u32, th_warning_count, 1));
    gpu_cuda_destroy_queue(q);
}

/* Option graphs=off, and segments of one layer: never a graph. */
Test(gpu_cuda_queue, graphs_off_and_single_layers_launch_directly) {
    static const int one[] = {3, -1};
    plx_queue *q = make_queue();
    for (int round = 0; round < 3; round++) {
        run_segment(q, false, one);
    }
    cr_assert(eq(str, calls, ""), "%s", calls);
    gpu_cuda_destroy_queue(q);
    backend.graphs = false;
    q = make_queue();
    clear_logs();
    for (int round = 0; round < 3; round++) {
        run_segment(q, false, abc);
    }
    cr_assert(eq(str, calls, ""), "%s", calls);
    gpu_cuda_destroy_queue(q);
}

/* A working memory whose execution alternates with another backend has
 * several segments per execution: each gets its graph. */
Test(gpu_cuda_queue, several_segments_per_execution_each_replay) {
    static const int first[] = {0, 1, -1}, second[] = {2, 3, 4, -1};
    plx_queue *q = make_queue();
    for (int round = 0; round < 2; round++) {
        run_segment(q, false, first);
        run_segment(q, false, second);
    }
    clear_logs();
    run_segment(q, false, first);
    run_segment(q, false, second);
    cr_assert(eq(str, calls, "G G "), "%s", calls);
    char want[256];
    snprintf(want, sizeof want, "%s", expected(first));
    note(want, "%s", expected(second));
    cr_assert(eq(str, ran, want));
    gpu_cuda_destroy_queue(q);
}

/* A segment that starts like a remembered one but differs is deferred, then
 * run one by one, in its own order, and remembered in turn. */
Test(gpu_cuda_queue, a_different_segment_with_the_same_start_runs_correctly) {
    static const int other[] = {0, 2, 1, 3, -1};
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    run_segment(q, false, abc);
    clear_logs();
    run_segment(q, false, other);
    cr_assert(eq(str, ran, (char *)expected(other)));
    cr_assert(eq(str, calls, ""), "%s", calls);
    clear_logs();
    run_segment(q, false, abc); /* still replayed */
    cr_assert(eq(str, calls, "G "), "%s", calls);
    gpu_cuda_destroy_queue(q);
}

/* A profiled execution runs without the graph, each launch timed, and the
 * wait reports one event per layer in order on the host's clock; the
 * graph is replayed again afterwards. */
Test(gpu_cuda_queue, a_profiled_execution_reports_each_layer) {
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    run_segment(q, false, abc);
    clear_logs();
    uint64_t t0 = th_host.now_ns(&th_host);
    run_segment(q, true, abc);
    uint64_t t1 = th_host.now_ns(&th_host);
    cr_assert(eq(str, ran, (char *)expected(abc)));
    cr_assert(eq(str, calls, ""), "profiled run used a graph: %s", calls);
    cr_assert(eq(sz, th_event_count, 3));
    for (size_t e = 0; e < 3; e++) {
        const th_event *g = &th_events[e];
        cr_assert(eq(str, (char *)g->layer, (char *)names[e]));
        cr_assert(eq(str, (char *)g->name, "model kernel"));
        cr_assert(eq(str, (char *)g->category, "kernel"));
        cr_assert(eq(u32, g->network_id, 7));
        cr_assert(eq(u64, g->duration_ns, 1000), "duration %llu",
                  (unsigned long long)g->duration_ns);
        cr_assert(le(u64, g->host_start_ns, t1));
        cr_assert(ge(u64, g->host_start_ns + 1000000u, t0));
        if (e > 0) {
            cr_assert(eq(u64, g->host_start_ns, th_events[e - 1].host_start_ns + 1000),
                      "events out of order");
        }
    }
    th_reset();
    clear_logs();
    run_segment(q, false, abc);
    cr_assert(eq(str, calls, "G "), "%s", calls);
    cr_assert(eq(sz, th_event_count, 0), "events without profile");
    gpu_cuda_destroy_queue(q);
}

/* Waits on this instance's fences go on the stream at the enqueue; a fence
 * of another instance is refused, naming it. */
Test(gpu_cuda_queue, wait_fences) {
    plx_queue *q = make_queue(), *q2 = make_queue();
    OKS(enqueue_ex(q2, 4, false, NULL, 0));
    plx_fence *other = NULL;
    OKS(gpu_cuda_queue_signal(q2, &other));
    clear_logs();
    OKS(enqueue_ex(q, 0, false, &other, 1));
    cr_assert(eq(str, calls, "W "), "%s", calls);
    plx_backend stranger = backend;
    plx_factory stranger_factory = factory;
    stranger_factory.backend = &stranger;
    plx_queue *q3 = NULL;
    plx_queue_params qp = {sizeof qp, 7};
    OKS(gpu_cuda_create_queue(&stranger_factory, &qp, &q3));
    plx_status s = enqueue_ex(q3, 1, false, &other, 1);
    cr_assert(not(zero(ptr, s)));
    cr_assert(eq(int, (int)s->code, (int)PLX_INVALID_ARGUMENT));
    cr_assert(not(zero(ptr, strstr(s->message, "wait fence 0"))), "%s", s->message);
    free(s);
    plx_fence *fence = NULL;
    OKS(gpu_cuda_queue_signal(q, &fence));
    OKS(gpu_cuda_fence_wait(fence));
    OKS(gpu_cuda_fence_wait(other));
    gpu_cuda_destroy_fence(fence);
    gpu_cuda_destroy_fence(other);
    gpu_cuda_destroy_queue(q3);
    gpu_cuda_destroy_queue(q2);
    gpu_cuda_destroy_queue(q);
}

/* A launch that fails in a deferred segment fails the signal, naming its
 * layer; the queue stays usable. */
Test(gpu_cuda_queue, a_failed_deferred_launch_names_its_layer) {
    plx_queue *q = make_queue();
    run_segment(q, false, abc);
    run_segment(q, false, abc);
    work[1].fails = true;
    work[2].ptr = memory[7]; /* captured again: the failure shows in the capture */
    for (int i = 0; i < 3; i++) {
        OKS(enqueue_ex(q, i, false, NULL, 0));
    }
    plx_fence *fence = NULL;
    plx_status s = gpu_cuda_queue_signal(q, &fence);
    cr_assert(not(zero(ptr, s)));
    cr_assert(not(zero(ptr, strstr(s->message, "layer 'l1'"))), "%s", s->message);
    free(s);
    work[1].fails = false;
    clear_logs();
    run_segment(q, false, abc);
    cr_assert(eq(str, ran, (char *)expected(abc)));
    gpu_cuda_destroy_queue(q);
}

/* The steady state allocates nothing and creates no CUDA events: fences
 * come back from the queue's free list. */
Test(gpu_cuda_queue, the_steady_state_allocates_nothing) {
    plx_queue *q = make_queue();
    for (int round = 0; round < 3; round++) {
        run_segment(q, false, abc);
        run_segment(q, true, abc);
    }
    unsigned long allocations = th_allocation_count;
    int events = events_created;
    for (int round = 0; round < 10; round++) {
        run_segment(q, false, abc);
        run_segment(q, true, abc);
    }
    cr_assert(eq(u64, (uint64_t)th_allocation_count, (uint64_t)allocations));
    cr_assert(eq(int, events_created, events));
    gpu_cuda_destroy_queue(q);
}

/* A fence may outlive its queue: it is released on its own, and a queue
 * destroyed with fences unwaited and profiled launches unreported leaks
 * nothing. */
Test(gpu_cuda_queue, fences_and_queues_in_any_order) {
    plx_queue *q = make_queue();
    OKS(enqueue_ex(q, 0, true, NULL, 0));
    OKS(enqueue_ex(q, 1, true, NULL, 0));
    plx_fence *f1 = NULL, *f2 = NULL;
    OKS(gpu_cuda_queue_signal(q, &f1));
    OKS(enqueue_ex(q, 2, true, NULL, 0));
    OKS(gpu_cuda_queue_signal(q, &f2));
    OKS(gpu_cuda_fence_wait(f1)); /* reports l0 and l1 only */
    cr_assert(eq(sz, th_event_count, 2));
    gpu_cuda_destroy_fence(f1);
    gpu_cuda_destroy_queue(q);
    OKS(gpu_cuda_fence_wait(f2)); /* orphaned: waits, reports nothing */
    cr_assert(eq(sz, th_event_count, 2));
    gpu_cuda_destroy_fence(f2);
}

/* A workload's device flag (gather's index check) is read by the wait on
 * the fence covering it, replayed or not: its failure is the fence's
 * verdict, the same on a second wait, and the next execution is clean. */
Test(gpu_cuda_queue, checks_are_read_by_the_wait_that_covers_them) {
    work[1].checked = true;
    plx_queue *q = make_queue();
    for (int round = 0; round < 4; round++) { /* direct, captured, replayed */
        work[1].flag_next = round == 3;
        for (int i = 0; i < 3; i++) {
            OKS(enqueue_ex(q, i, false, NULL, 0));
        }
        plx_fence *fence = NULL;
        OKS(gpu_cuda_queue_signal(q, &fence));
        plx_status s = gpu_cuda_fence_wait(fence);
        if (round < 3) {
            cr_assert(zero(ptr, s), "round %d: %s", round, s ? s->message : "");
        } else {
            cr_assert(not(zero(ptr, s)), "a raised flag went unseen");
            cr_assert(eq(int, (int)s->code, (int)PLX_INVALID_ARGUMENT));
            cr_assert(not(zero(ptr, strstr(s->message, "layer 'l1'"))), "%s", s->message);
            free(s);
            s = gpu_cuda_fence_wait(fence); /* the same verdict */
            cr_assert(not(zero(ptr, s)));
            cr_assert(not(zero(ptr, strstr(s->message, "layer 'l1'"))), "%s", s->message);
            free(s);
        }
        gpu_cuda_destroy_fence(fence);
    }
    cr_assert(eq(str, calls, "B E I G G G "), "%s", calls);
    work[1].flag_next = false;
    run_segment(q, false, abc);
    gpu_cuda_destroy_queue(q);
}
