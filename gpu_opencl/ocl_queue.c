/* gpu_opencl: queued execution and the backend's profiling events
 * apart from workloads since the ordering between queues, the
 * deferred index checks and the clock mapping are their own subject.
 *
 * A working memory's queue (struct plx_queue) is one in-order
 * cl_command_queue: enqueue_workload puts a layer's launches on it and
 * returns; queue_signal puts a marker after them and flushes; the host
 * waits on the marker's event (fence_wait) only where a tensor leaves the
 * device. Nothing in the steady state allocates: the arrays below grow at
 * the first executions only, and a fence comes from the queue's free list.
 *
 * Index checks (ocl_ops.h, ocl_index_check) cannot be read at enqueue:
 * each workload whose kernels flag indices is noted with its layer's name,
 * and the wait that covers it reads the flags, after the wait, and reports
 * the first failure as "layer 'NAME': <the message execute_workload gives>".
 *
 * Profiling: an enqueue with params->profile goes to a second queue
 * made with CL_QUEUE_PROFILING_ENABLE (created at the first such enqueue),
 * and each launch keeps its cl_event; the wait reads their
 * CL_PROFILING_COMMAND_START/END and hands them to host->record_event with
 * a clock mapping taken right then (clock_sync below). Without profile no
 * event is created per launch. Work moves between the two queues in order:
 * a marker on the queue used before goes into the wait list of a barrier
 * on the one used now. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ocl_backend.h"

/* A workload enqueued since the last wait whose index check is still to be
 * read. `seq` is the enqueue's number on its queue. */
typedef struct pending_check {
    plx_workload *workload;
    const char *layer; /* plx_enqueue_params.layer_name: valid while the network is loaded */
    uint64_t seq;
} pending_check;

/* One launch enqueued with profile on, whose times the next wait reads. */
typedef struct timed_launch {
    cl_event event; /* owned */
    const char *name; /* the plan's launch name: valid while the workload lives */
    const char *category;
    const char *layer;
    uint64_t seq;
} timed_launch;

/* A fence: the event of a marker after everything enqueued before it, and,
 * once waited on, its verdict. Fences live on their queue's lists (live or
 * free) so that signalling reuses them; a fence whose queue is destroyed
 * first is "orphaned" (queue NULL) and freed by destroy_fence. */
struct plx_fence {
    plx_queue *queue;     /* NULL once orphaned */
    const plx_host *host; /* the instance's, for orphans */
    plx_backend *backend; /* whose fence: enqueue_workload checks wait_fences */
    cl_event event;
    uint64_t seq; /* covers the enqueues numbered below it */
    /* The layers enqueued between the previous signal and this one, for a
     * failure of the device that no layer claims. */
    const char *first_layer, *last_layer;
    bool waited;
    plx_status_code code; /* the verdict: PLX_OK or the failure's */
    char message[640];
    plx_fence *prev, *next; /* the queue's live list, or (next) its free list */
};

struct plx_queue {
    plx_factory *factory;
    const plx_host *host;
    uint32_t network_id;
    cl_command_queue plain;     /* in order, without profiling */
    cl_command_queue profiling; /* in order, CL_QUEUE_PROFILING_ENABLE; NULL until needed */
    bool profiling_failed;      /* could not create it: profile is ignored */
    cl_command_queue last;      /* the queue that got work last (NULL: none yet) */
    uint64_t seq;               /* enqueues so far */
    const char *first_layer, *last_layer; /* since the last signal */

    pending_check *checks;
    size_t check_count, check_cap;
    timed_launch *timed;
    size_t timed_count, timed_cap;
    cl_event *wait_list;
    size_t wait_cap;

    /* A failure a wait fence already reported (R-24: the work waiting on
     * it fails with its verdict): the next wait covering `carried_seq`
     * reports it. PLX_OK: none. */
    plx_status_code carried_code;
    uint64_t carried_seq;
    char carried_message[640];

    plx_fence *live; /* handed to the host, not destroyed */
    plx_fence *free_fences;
    bool sync_warned; /* a clock_sync failure was logged */
};

/* Grows *array (of `elem` bytes each) to hold at least `need`, doubling.
 * Only the first executions grow it; later ones find the room there. */
static bool reserve(const plx_host *host, void **array, size_t *cap, size_t count, size_t need,
                    size_t elem) {
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        n *= 2;
    }
    void *p = host->alloc(host, n * elem, 0);
    if (!p) {
        return false;
    }
    if (count) {
        memcpy(p, *array, count * elem);
    }
    host->free(host, *array);
    *array = p;
    *cap = n;
    return true;
}

static plx_status queue_failure(const plx_host *host, cl_int rc, const char *call) {
    return ocl_cl_failure(host, rc, PLX_INTERNAL, "%s", call);
}

plx_status ocl_create_queue(plx_factory *f, const plx_queue_params *params,
                            plx_queue **out_queue) {
    const plx_host *host = f->host;
    plx_queue *q = host->alloc(host, sizeof *q, 0);
    if (!q) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate the queue");
    }
    memset(q, 0, sizeof *q);
    q->factory = f;
    q->host = host;
    q->network_id = f->network_id;
    if (params && params->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_queue_params, network_id)) {
        q->network_id = params->network_id;
    }
    cl_int rc = CL_SUCCESS;
    q->plain = clCreateCommandQueue(f->dev.context, f->dev.device, 0, &rc);
    if (rc != CL_SUCCESS || !q->plain) {
        host->free(host, q);
        return ocl_cl_failure(host, rc, PLX_INTERNAL, "clCreateCommandQueue");
    }
    /* Room for a network's usual checks and wait lists from the start. */
    if (!reserve(host, (void **)&q->checks, &q->check_cap, 0, 16, sizeof *q->checks) ||
        !reserve(host, (void **)&q->wait_list, &q->wait_cap, 0, 8, sizeof *q->wait_list)) {
        ocl_destroy_queue(q);
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate the queue's lists");
    }
    *out_queue = q;
    return NULL;
}

static void free_fence_memory(const plx_host *host, plx_fence *f) {
    if (f->event) {
        clReleaseEvent(f->event);
    }
    host->free(host, f);
}

void ocl_destroy_queue(plx_queue *q) {
    if (!q) {
        return;
    }
    const plx_host *host = q->host;
    /* The host destroys a queue only when its work was waited on; finishing
     * anyway keeps the buffers safe from a host that did not. */
    if (q->plain) {
        clFinish(q->plain);
    }
    if (q->profiling) {
        clFinish(q->profiling);
    }
    for (size_t i = 0; i < q->timed_count; i++) {
        clReleaseEvent(q->timed[i].event);
    }
    for (plx_fence *f = q->live; f; f = f->next) {
        f->queue = NULL; /* orphaned: destroy_fence frees it */
    }
    while (q->free_fences) {
        plx_fence *f = q->free_fences;
        q->free_fences = f->next;
        free_fence_memory(host, f);
    }
    if (q->profiling) {
        clReleaseCommandQueue(q->profiling);
    }
    if (q->plain) {
        clReleaseCommandQueue(q->plain);
    }
    host->free(host, q->checks);
    host->free(host, q->timed);
    host->free(host, q->wait_list);
    host->free(host, q);
}

/* The profiling queue, made at the first profiled enqueue; NULL (and a
 * warning, once) when the device refuses it: the work then runs
 * unprofiled rather than failing. */
static cl_command_queue profiling_queue(plx_queue *q) {
    if (!q->profiling && !q->profiling_failed) {
        plx_factory *f = q->factory;
        cl_int rc = CL_SUCCESS;
        q->profiling = clCreateCommandQueue(f->dev.context, f->dev.device,
                                            CL_QUEUE_PROFILING_ENABLE, &rc);
        if (rc != CL_SUCCESS || !q->profiling) {
            char nb[32];
            q->profiling = NULL;
            q->profiling_failed = true;
            q->host->log(q->host, PLX_LOG_WARN,
                         "gpu_opencl: no device times in the trace: clCreateCommandQueue("
                         "CL_QUEUE_PROFILING_ENABLE): %s",
                         ocl_error_name(rc, nb, sizeof nb));
        }
    }
    return q->profiling;
}

plx_status ocl_enqueue_workload(plx_queue *q, const plx_enqueue_params *p) {
    const plx_host *host = q->host;
    plx_factory *f = q->factory;
    if (!p || p->struct_size < PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, layer_name) ||
        !p->workload) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "enqueue_workload: no workload, or parameters of %u bytes",
                                   p ? p->struct_size : 0u);
    }
    plx_workload *w = p->workload;
    if (w->factory != f) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "enqueue_workload: the workload belongs to another network's "
                                   "factory than the queue's");
    }
    uint32_t fence_count = p->wait_fences ? p->wait_fence_count : 0;
    bool profile = p->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, profile) &&
                   p->profile && f->profiling;
    cl_command_queue target = q->plain;
    if (profile) {
        cl_command_queue pq = profiling_queue(q);
        if (pq) {
            target = pq;
        } else {
            profile = false;
        }
    }
    /* Room first, so that nothing fails to be noted once it is enqueued. */
    if (!reserve(host, (void **)&q->wait_list, &q->wait_cap, 0, (size_t)fence_count + 1,
                 sizeof *q->wait_list) ||
        !reserve(host, (void **)&q->checks, &q->check_cap, q->check_count, q->check_count + 1,
                 sizeof *q->checks) ||
        (profile && !reserve(host, (void **)&q->timed, &q->timed_cap, q->timed_count,
                             q->timed_count + OCL_MAX_LAUNCHES, sizeof *q->timed))) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "enqueue_workload: cannot grow the queue's lists");
    }
    cl_uint n = 0;
    for (uint32_t i = 0; i < fence_count; i++) {
        const plx_fence *fe = p->wait_fences[i];
        if (!fe || fe->backend != f->backend || !fe->event) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "enqueue_workload: wait fence %u is not a fence of this "
                                       "gpu_opencl instance (fence_domain %s)",
                                       i, f->backend->fence_domain);
        }
        q->wait_list[n++] = fe->event;
    }
    /* Moving between the plain and the profiling queue: what the other one
     * holds comes first (a marker there, flushed so that this queue's wait
     * on it can be met). */
    cl_event switch_event = NULL;
    if (q->last && q->last != target) {
        cl_int rc = clEnqueueMarkerWithWaitList(q->last, 0, NULL, &switch_event);
        if (rc == CL_SUCCESS) {
            rc = clFlush(q->last);
        }
        if (rc != CL_SUCCESS) {
            if (switch_event) {
                clReleaseEvent(switch_event);
            }
            return queue_failure(host, rc, "clEnqueueMarkerWithWaitList (changing queues)");
        }
        q->wait_list[n++] = switch_event;
    }
    if (n > 0) {
        cl_int rc = clEnqueueBarrierWithWaitList(target, n, q->wait_list, NULL);
        if (switch_event) {
            clReleaseEvent(switch_event);
        }
        if (rc != CL_SUCCESS) {
            return ocl_cl_failure(host, rc, PLX_INTERNAL, "clEnqueueBarrierWithWaitList(%u events)",
                                  (unsigned)n);
        }
    }
    q->last = target;
    cl_event events[OCL_MAX_LAUNCHES];
    plx_status s = ocl_workload_enqueue(w, target, profile ? events : NULL);
    if (s) {
        return s;
    }
    uint64_t seq = q->seq++;
    /* a wait fence's verdict becomes this work's. A fence of another
     * queue of this instance comes from the same working memory (the host
     * hands fences on within an execution), so that queue is idle now: its
     * index checks that the fence covers move here, to be read at this
     * queue's wait, after the work they cover ran. A failure of the device
     * reaches this queue's marker through the wait list
     * (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST). */
    for (uint32_t i = 0; i < fence_count; i++) {
        plx_fence *fe = p->wait_fences[i];
        plx_queue *from = fe->queue;
        if (fe->waited) {
            if (fe->code != PLX_OK && q->carried_code == PLX_OK) {
                q->carried_code = fe->code;
                q->carried_seq = seq;
                snprintf(q->carried_message, sizeof q->carried_message, "%s", fe->message);
            }
            continue;
        }
        if (!from || from == q) {
            continue;
        }
        size_t moved = 0;
        while (moved < from->check_count && from->checks[moved].seq < fe->seq) {
            moved++;
        }
        if (moved && reserve(host, (void **)&q->checks, &q->check_cap, q->check_count,
                             q->check_count + moved + 1, sizeof *q->checks)) {
            for (size_t k = 0; k < moved; k++) {
                q->checks[q->check_count] = from->checks[k];
                q->checks[q->check_count++].seq = seq;
            }
            from->check_count -= moved;
            memmove(from->checks, from->checks + moved, from->check_count * sizeof *from->checks);
        }
        if (from->carried_code != PLX_OK && from->carried_seq < fe->seq &&
            q->carried_code == PLX_OK) {
            q->carried_code = from->carried_code;
            q->carried_seq = seq;
            snprintf(q->carried_message, sizeof q->carried_message, "%s", from->carried_message);
            from->carried_code = PLX_OK;
        }
    }
    if (!q->first_layer) {
        q->first_layer = p->layer_name;
    }
    q->last_layer = p->layer_name;
    if (ocl_workload_has_check(w)) {
        q->checks[q->check_count++] = (pending_check){w, p->layer_name, seq};
    }
    if (profile) {
        for (uint32_t i = 0; i < OCL_MAX_LAUNCHES && i < w->plan.count; i++) {
            if (events[i]) {
                const ocl_launch *l = &w->plan.launches[i];
                q->timed[q->timed_count++] = (timed_launch){
                    events[i], l->name, l->kind == OCL_LAUNCH_COPY ? "transfer" : "kernel",
                    p->layer_name, seq};
            }
        }
    }
    return NULL;
}

plx_status ocl_queue_signal(plx_queue *q, plx_fence **out_fence) {
    const plx_host *host = q->host;
    plx_fence *f = q->free_fences;
    if (f) {
        q->free_fences = f->next;
    } else {
        f = host->alloc(host, sizeof *f, 0);
        if (!f) {
            return host->status_create(host, PLX_OUT_OF_MEMORY, "cannot allocate a fence");
        }
    }
    memset(f, 0, sizeof *f);
    f->queue = q;
    f->host = host;
    f->backend = q->factory->backend;
    /* The queue that got work last comes after everything else (changing
     * queues orders them), so its marker covers the whole queue. */
    cl_command_queue target = q->last ? q->last : q->plain;
    cl_int rc = clEnqueueMarkerWithWaitList(target, 0, NULL, &f->event);
    if (rc == CL_SUCCESS) {
        rc = clFlush(target); /* submitted now: a fence signals without another call */
    }
    if (rc != CL_SUCCESS) {
        if (f->event) {
            clReleaseEvent(f->event);
            f->event = NULL;
        }
        f->next = q->free_fences;
        q->free_fences = f;
        return ocl_cl_failure(host, rc, PLX_INTERNAL, "clEnqueueMarkerWithWaitList (signal)");
    }
    f->seq = q->seq;
    f->first_layer = q->first_layer;
    f->last_layer = q->last_layer;
    q->first_layer = q->last_layer = NULL;
    f->next = q->live;
    if (q->live) {
        q->live->prev = f;
    }
    q->live = f;
    *out_fence = f;
    return NULL;
}

/* A clock mapping for the events of one wait: a marker on the profiling
 * queue, between two readings of the host's clock. The marker ends after
 * the first reading (it is enqueued after it) and before the second (the
 * wait returned), so its CL_PROFILING_COMMAND_END, on the device's clock,
 * is the host's midpoint within half their distance, which *bound_ns gets.
 * (OpenCL 2.1's clGetDeviceAndHostTimer is not in the 1.2 API the backend
 * uses, and its host timer is not said to be the host's CLOCK_MONOTONIC,
 * so it would still need this mapping.) */
static bool clock_sync(plx_queue *q, uint64_t *device_ns, uint64_t *host_ns, uint64_t *bound_ns,
                       char *why, size_t why_size) {
    const plx_host *host = q->host;
    char nb[32];
    cl_event ev = NULL;
    uint64_t t0 = host->now_ns(host);
    cl_int rc = clEnqueueMarkerWithWaitList(q->profiling, 0, NULL, &ev);
    if (rc == CL_SUCCESS) {
        rc = clWaitForEvents(1, &ev);
    }
    uint64_t t1 = host->now_ns(host);
    cl_ulong end = 0;
    if (rc == CL_SUCCESS) {
        rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    }
    if (ev) {
        clReleaseEvent(ev);
    }
    if (rc != CL_SUCCESS) {
        snprintf(why, why_size, "the clock mapping's marker: %s", ocl_error_name(rc, nb, sizeof nb));
        return false;
    }
    *device_ns = end;
    *host_ns = t0 + (t1 - t0) / 2;
    *bound_ns = (t1 - t0 + 1) / 2;
    return true;
}

/* After a wait: hands the device times of the launches enqueued before the
 * fence to the host's trace, and releases their events. */
static void record_timed(plx_queue *q, uint64_t fence_seq) {
    const plx_host *host = q->host;
    size_t done = 0;
    while (done < q->timed_count && q->timed[done].seq < fence_seq) {
        done++;
    }
    if (done == 0) {
        return;
    }
    uint64_t dev_sync = 0, host_sync = 0, bound = 0;
    char why[160];
    bool synced = q->profiling && clock_sync(q, &dev_sync, &host_sync, &bound, why, sizeof why);
    if (!synced && !q->sync_warned) {
        q->sync_warned = true;
        host->log(host, PLX_LOG_WARN, "gpu_opencl: device times left out of the trace: %s",
                  q->profiling ? why : "no profiling queue");
    }
    for (size_t i = 0; i < done; i++) {
        timed_launch *t = &q->timed[i];
        cl_ulong start = 0, end = 0;
        if (synced &&
            clGetEventProfilingInfo(t->event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                    NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(t->event, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                    NULL) == CL_SUCCESS) {
            plx_profile_event e;
            memset(&e, 0, sizeof e);
            e.struct_size = PLX_STRUCT_SIZE_UPTO(plx_profile_event, clock_sync_host_ns);
            e.network_id = q->network_id;
            e.name = t->name;
            e.category = t->category;
            e.layer = t->layer;
            e.start_ns = start;
            e.duration_ns = end > start ? end - start : 0;
            e.clock_sync_backend_ns = dev_sync;
            e.clock_sync_host_ns = host_sync;
            host->record_event(host, &e);
        }
        clReleaseEvent(t->event);
    }
    q->timed_count -= done;
    memmove(q->timed, q->timed + done, q->timed_count * sizeof *q->timed);
    if (synced) {
        host->log(host, PLX_LOG_DEBUG,
                  "gpu_opencl: %zu device events traced, clock mapping within %" PRIu64 " ns",
                  done, bound);
    }
}

/* Sets the fence's verdict (the first failure only). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void fence_fail(plx_fence *f, plx_status_code code, const char *fmt, ...) {
    if (f->code != PLX_OK) {
        return;
    }
    f->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
}

/* The layers a device failure is put on: "layer 'a'" or "layers 'a' to 'b'". */
static void layer_range(const plx_fence *f, char *buf, size_t size) {
    if (!f->first_layer) {
        snprintf(buf, size, "the work");
    } else if (!f->last_layer || f->last_layer == f->first_layer ||
               strcmp(f->first_layer, f->last_layer) == 0) {
        snprintf(buf, size, "layer '%s'", f->first_layer);
    } else {
        snprintf(buf, size, "layers '%s' to '%s'", f->first_layer, f->last_layer);
    }
}

plx_status ocl_fence_wait(plx_fence *f) {
    const plx_host *host = f->host;
    if (!f->waited) {
        char nb[32], nb2[32], layers[200];
        cl_int rc = clWaitForEvents(1, &f->event);
        cl_int st = CL_COMPLETE;
        cl_int qrc = clGetEventInfo(f->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                                    NULL);
        bool device_ok = rc == CL_SUCCESS && qrc == CL_SUCCESS && st == CL_COMPLETE;
        if (!device_ok) {
            layer_range(f, layers, sizeof layers);
            cl_int bad = st < 0 ? st : rc != CL_SUCCESS ? rc : qrc;
            plx_status_code code = (bad == CL_OUT_OF_HOST_MEMORY || bad == CL_OUT_OF_RESOURCES ||
                                    bad == CL_MEM_OBJECT_ALLOCATION_FAILURE)
                                       ? PLX_OUT_OF_MEMORY
                                       : PLX_INTERNAL;
            fence_fail(f, code,
                       "gpu_opencl: the device failed %s: clWaitForEvents: %s (command execution "
                       "status %s)",
                       layers, ocl_error_name(rc, nb, sizeof nb),
                       qrc == CL_SUCCESS ? ocl_error_name(st, nb2, sizeof nb2) : "unknown");
        }
        plx_queue *q = f->queue;
        if (q && q->carried_code != PLX_OK && q->carried_seq < f->seq) {
            fence_fail(f, q->carried_code, "%s", q->carried_message);
            q->carried_code = PLX_OK;
        }
        if (q) {
            /* The index checks of the work the fence covers, read now that
             * it ran (after a device failure their flags mean nothing). */
            size_t done = 0;
            while (done < q->check_count && q->checks[done].seq < f->seq) {
                pending_check *c = &q->checks[done++];
                if (!device_ok || f->code != PLX_OK) {
                    continue;
                }
                plx_status s = ocl_workload_check(c->workload, q->factory->map_queue, c->layer);
                if (s) {
                    fence_fail(f, host->status_code(host, s), "%s", host->status_message(host, s));
                    host->status_free(host, s);
                }
            }
            q->check_count -= done;
            memmove(q->checks, q->checks + done, q->check_count * sizeof *q->checks);
            record_timed(q, f->seq);
        }
        f->waited = true;
    }
    if (f->code == PLX_OK) {
        return NULL;
    }
    return host->status_create(host, f->code, "%s", f->message);
}

plx_status ocl_fence_query(plx_fence *f, bool *out_signalled) {
    if (f->waited) {
        *out_signalled = true;
        return NULL;
    }
    cl_int st = CL_QUEUED;
    cl_int rc = clGetEventInfo(f->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (rc != CL_SUCCESS) {
        return ocl_cl_failure(f->host, rc, PLX_INTERNAL,
                              "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)");
    }
    *out_signalled = st == CL_COMPLETE || st < 0;
    return NULL;
}

void ocl_destroy_fence(plx_fence *f) {
    if (!f) {
        return;
    }
    plx_queue *q = f->queue;
    if (!q) {
        free_fence_memory(f->host, f);
        return;
    }
    if (f->prev) {
        f->prev->next = f->next;
    } else {
        q->live = f->next;
    }
    if (f->next) {
        f->next->prev = f->prev;
    }
    if (f->event) {
        clReleaseEvent(f->event);
        f->event = NULL;
    }
    f->prev = NULL;
    f->next = q->free_fences;
    q->free_fences = f;
}
