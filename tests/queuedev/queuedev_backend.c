/* queuedev: a test-only backend with queued execution and its own
 * profiling events, for tests/test_queued.c and
 * tests/stress_queued.c.
 *
 * Built several times from this source (tests/queuedev/meson.build), each
 * with its own id (-DQD_ID): "queuedev" and "queuedev_b", so that two queued
 * backends share a runtime and can hand fences to each other; and one build
 * per function of the R-24 group with that function left NULL
 * (-DQD_OMIT=<index into qd_function_names>), which a host must reject.
 *
 * - Supports: relu and add (float32, equal shapes) and constants (float32).
 *   A layer whose name ends in "@<id>" is refused by every build but the
 *   one of that id, so that tests place layers on queuedev_b.
 * - Each queue (one per working memory) owns a worker thread that runs the
 *   enqueued workloads in order, after enqueue_workload has returned, so
 *   that results really arrive late; a fence signals when the worker has
 *   finished everything enqueued before it. The ring of a queue is
 *   preallocated and fence records are recycled per backend, so enqueuing
 *   allocates nothing and signalling allocates only while more fences are
 *   alive than ever before.
 * - Option `delay_us` (default 0): the worker sleeps this long before each
 *   workload, so that a host that reads a tensor without waiting reads
 *   stale data.
 * - Option `kinds`: when given, reported as import_memory_kinds,
 *   although queuedev has no import_external_memory: the host must reject
 *   it.
 * - Option `domain`: when given (even empty, to test the host's check),
 *   reported as the fence_domain capability. A wait fence is accepted from
 *   this backend, or from any queuedev build whose domain is the same
 *   non-empty string; otherwise enqueue_workload fails naming the layer.
 *   The worker waits for every wait fence before running the work; a wait
 *   fence that reports a failure makes the work fail with the same code and
 *   message, without running it, so that a failure is never lost when the
 *   host hands a fence on instead of waiting.
 * - A relu layer whose name starts with "fail" fails when it runs and its
 *   first input element is negative: fence_wait reports PLX_INVALID_ARGUMENT
 *   "layer '<name>': negative input" (execute_workload the same). A layer
 *   whose name starts with "noenq" cannot be enqueued: enqueue_workload
 *   returns PLX_UNAVAILABLE naming it. A workload that fails, or does not
 *   run, zeroes its output so that later work reads defined bytes.
 * - With plx_enqueue_params.profile, the worker records one event per
 *   workload it runs through host->record_event: name "qd_relu" or
 *   "qd_add", category "kernel", the layer's name, on a backend clock that
 *   is the host's clock plus 1000 s, with the clock mapping, so a test can
 *   see that the host placed the event on its own clock.
 * - Capabilities: queued_execution, async_execution,
 *   externally_managed_memory, memory_import_malloc, memory_export_malloc,
 *   and fence_domain when set.
 * Lives in its own build directory so that registry tests scanning the
 * fake plug-ins do not see it; tests load each build by its file path. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <plexus/backend.h>

#ifndef QD_ID
#define QD_ID "queuedev"
#endif
#ifndef QD_OMIT
#define QD_OMIT (-1)
#endif

/* Queue slots per working memory: more than any test network has layers.
 * A full ring makes enqueue_workload wait for the worker. */
#define QD_RING 64
/* Wait fences one enqueued workload may carry. */
#define QD_MAX_WAITS 8
#define QD_MESSAGE 256
/* The backend clock runs this far ahead of the host's (R-25 tests). */
#define QD_CLOCK_OFFSET_NS 1000000000000ull
#define QD_FENCE_MAGIC 0x71646665u /* "qdfe" */
#define QD_DOMAIN_MAX 256

typedef struct plx_fence qd_fence;

struct plx_backend {
    const plx_host *host;
    bool has_domain;
    char domain[QD_DOMAIN_MAX];
    char kinds[QD_DOMAIN_MAX]; /* empty: none reported */
    unsigned delay_us;
    plx_capability caps[7];
    size_t cap_count;
    /* Guards every queue of this backend and every fence record it owns. */
    pthread_mutex_t mu;
    /* Broadcast whenever a fence of this backend signals. */
    pthread_cond_t fence_cv;
    qd_fence *free_fences;
};

/* A fence is the record of one stretch of a queue's work: the workloads
 * enqueued between two queue_signal calls. The queue's open record collects
 * workloads; queue_signal closes it (end = the number enqueued so far) and
 * hands it to the host. Fields guarded by owner->mu. */
struct plx_fence {
    uint32_t magic;
    plx_backend *owner;
    uint64_t end;
    bool closed;
    bool signalled;
    bool failed;
    plx_status_code code;
    char message[QD_MESSAGE];
    /* Holders: the queue while the record is open, the host's handle, each
     * enqueued workload it covers, each workload waiting on it. */
    unsigned refs;
    qd_fence *next_free;
};

struct plx_factory {
    plx_backend *backend;
    const plx_host *host;
};

struct plx_tensor_handle {
    const plx_host *host;
    size_t bytes;
    void *owned;
    void *data;
};

enum kind { RELU, ADD, CONSTANT };

struct plx_workload {
    const plx_host *host;
    enum kind kind;
    bool fail_on_negative;
    bool refuse_enqueue;
    size_t elements;
    const void *constant;
    plx_tensor_handle *in[2];
    plx_tensor_handle *out;
    char name[64];
};

typedef struct qd_item {
    plx_workload *workload;
    const char *layer;
    bool profile;
    qd_fence *epoch;
    uint32_t wait_count;
    qd_fence *waits[QD_MAX_WAITS];
} qd_item;

struct plx_queue {
    plx_backend *backend;
    const plx_host *host;
    uint32_t network_id;
    pthread_t thread;
    /* Guarded by backend->mu. */
    pthread_cond_t work_cv;  /* an item was enqueued, or stop */
    pthread_cond_t space_cv; /* an item completed */
    qd_item ring[QD_RING];
    uint64_t enqueued;  /* items ever enqueued */
    uint64_t completed; /* items the worker finished (in order) */
    bool stop;
    qd_fence *open;
};

static const plx_option_info options[] = {
    {"domain", "the fence_domain to report (absent: none)", NULL},
    {"delay_us", "microseconds the worker sleeps before each workload", "0"},
    {"kinds", "an import_memory_kinds value to report, although queuedev has no "
              "import_external_memory (absent: none)", NULL},
};

/* ---- Fence records ------------------------------------------------------ */

/* A fresh open record; called with b->mu held. NULL when out of memory. */
static qd_fence *fence_get(plx_backend *b) {
    qd_fence *f = b->free_fences;
    if (f) {
        b->free_fences = f->next_free;
    } else {
        f = b->host->alloc(b->host, sizeof *f, 0);
        if (!f) {
            return NULL;
        }
    }
    memset(f, 0, sizeof *f);
    f->magic = QD_FENCE_MAGIC;
    f->owner = b;
    f->refs = 1;
    return f;
}

/* Drops one reference; called with f->owner->mu held. */
static void fence_unref_locked(qd_fence *f) {
    if (--f->refs == 0) {
        f->magic = 0;
        f->next_free = f->owner->free_fences;
        f->owner->free_fences = f;
    }
}

static void fence_ref(qd_fence *f) {
    pthread_mutex_lock(&f->owner->mu);
    f->refs++;
    pthread_mutex_unlock(&f->owner->mu);
}

static void fence_unref(qd_fence *f) {
    plx_backend *owner = f->owner;
    pthread_mutex_lock(&owner->mu);
    fence_unref_locked(f);
    pthread_mutex_unlock(&owner->mu);
}

/* Sets the record's verdict to the first failure; owner->mu held. */
static void fence_fail_locked(qd_fence *f, plx_status_code code, const char *message) {
    if (!f->failed) {
        f->failed = true;
        f->code = code;
        snprintf(f->message, sizeof f->message, "%s", message);
    }
}

/* ---- Backend ------------------------------------------------------------ */

static plx_status create(const plx_host *host, const plx_option *opts, size_t count,
                         plx_backend **out) {
    bool has_domain = false;
    const char *domain = "";
    const char *kinds = "";
    unsigned long delay = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(opts[i].key, "domain") == 0) {
            if (strlen(opts[i].value) >= QD_DOMAIN_MAX) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           QD_ID ": option domain is longer than %d bytes",
                                           QD_DOMAIN_MAX - 1);
            }
            has_domain = true;
            domain = opts[i].value;
        } else if (strcmp(opts[i].key, "kinds") == 0) {
            kinds = opts[i].value;
        } else { /* delay_us: 0 to 99999999 */
            const char *v = opts[i].value;
            size_t k = 0;
            delay = 0;
            for (; v[k] >= '0' && v[k] <= '9' && k < 8; k++) {
                delay = delay * 10 + (unsigned long)(v[k] - '0');
            }
            if (k == 0 || v[k] != '\0') {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           QD_ID ": option delay_us=%s: expected 0 to 99999999",
                                           v);
            }
        }
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    memset(b, 0, sizeof *b);
    b->host = host;
    b->has_domain = has_domain;
    snprintf(b->domain, sizeof b->domain, "%s", domain);
    snprintf(b->kinds, sizeof b->kinds, "%s", kinds);
    b->delay_us = (unsigned)delay;
    if (pthread_mutex_init(&b->mu, NULL) != 0) {
        host->free(host, b);
        return host->status_create(host, PLX_INTERNAL, QD_ID ": pthread_mutex_init failed");
    }
    if (pthread_cond_init(&b->fence_cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        host->free(host, b);
        return host->status_create(host, PLX_INTERNAL, QD_ID ": pthread_cond_init failed");
    }
    size_t n = 0;
    b->caps[n++] = (plx_capability){PLX_CAP_QUEUED_EXECUTION, PLX_VALUE_BOOL, true, 0, NULL};
    b->caps[n++] = (plx_capability){PLX_CAP_ASYNC_EXECUTION, PLX_VALUE_BOOL, true, 0, NULL};
    b->caps[n++] =
        (plx_capability){PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_VALUE_BOOL, true, 0, NULL};
    b->caps[n++] = (plx_capability){PLX_CAP_IMPORT_MALLOC, PLX_VALUE_BOOL, true, 0, NULL};
    b->caps[n++] = (plx_capability){PLX_CAP_EXPORT_MALLOC, PLX_VALUE_BOOL, true, 0, NULL};
    if (has_domain) {
        b->caps[n++] = (plx_capability){PLX_CAP_FENCE_DOMAIN, PLX_VALUE_STRING, false, 0, b->domain};
    }
    if (b->kinds[0]) {
        b->caps[n++] =
            (plx_capability){PLX_CAP_IMPORT_MEMORY_KINDS, PLX_VALUE_STRING, false, 0, b->kinds};
    }
    b->cap_count = n;
    *out = b;
    return NULL;
}

static void destroy(plx_backend *b) {
    while (b->free_fences) {
        qd_fence *f = b->free_fences;
        b->free_fences = f->next_free;
        b->host->free(b->host, f);
    }
    pthread_cond_destroy(&b->fence_cv);
    pthread_mutex_destroy(&b->mu);
    b->host->free(b->host, b);
}

static plx_status get_capabilities(plx_backend *b, const plx_capability **out, size_t *count) {
    *out = b->caps;
    *count = b->cap_count;
    return NULL;
}

static bool all_float(const plx_tensor_info *t, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (t[i].dtype != PLX_DTYPE_FLOAT32) {
            return false;
        }
    }
    return true;
}

/* Which kernel runs `layer`, or -1. */
static int kind_of(const plx_layer_view *l) {
    if (!all_float(l->inputs, l->input_count) || !all_float(l->outputs, l->output_count)) {
        return -1;
    }
    if (l->op == PLX_OP_CONSTANT) {
        return CONSTANT;
    }
    if (l->op == PLX_OP_ACTIVATION &&
        ((const plx_activation_desc *)l->desc)->func == PLX_ACT_RELU) {
        return RELU;
    }
    if (l->op == PLX_OP_BINARY && ((const plx_binary_desc *)l->desc)->func == PLX_BINARY_ADD &&
        plx_tensor_info_same_shape(&l->inputs[0], &l->inputs[1])) {
        return ADD;
    }
    return -1;
}

static plx_status check_layer(plx_backend *b, const plx_layer_view *l) {
    const char *at = strchr(l->name, '@');
    if (at && strcmp(at + 1, QD_ID) != 0) {
        return b->host->status_create(b->host, PLX_UNSUPPORTED,
                                      QD_ID " leaves layers named '...@%s' to %s", at + 1, at + 1);
    }
    if (kind_of(l) < 0) {
        return b->host->status_create(b->host, PLX_UNSUPPORTED,
                                      QD_ID " runs only float32 relu, add of equal shapes and "
                                            "constants, not %s",
                                      plx_op_name(l->op));
    }
    return NULL;
}

static plx_status create_factory(plx_backend *b, const plx_factory_params *p, plx_factory **out) {
    (void)p;
    plx_factory *f = b->host->alloc(b->host, sizeof *f, 0);
    if (!f) {
        return b->host->status_create(b->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    f->backend = b;
    f->host = b->host;
    *out = f;
    return NULL;
}

static void destroy_factory(plx_factory *f) {
    f->host->free(f->host, f);
}

static plx_status create_handle(plx_factory *f, const plx_tensor_info *info,
                                const plx_tensor_handle_params *p, plx_tensor_handle **out) {
    (void)p;
    plx_tensor_handle *h = f->host->alloc(f->host, sizeof *h, 0);
    if (!h) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    memset(h, 0, sizeof *h);
    h->host = f->host;
    plx_tensor_info_byte_size(info, &h->bytes);
    *out = h;
    return NULL;
}

static void release(plx_tensor_handle *h) {
    if (h->data == h->owned) {
        h->data = NULL;
    }
    h->host->free(h->host, h->owned);
    h->owned = NULL;
}

static void destroy_handle(plx_tensor_handle *h) {
    release(h);
    h->host->free(h->host, h);
}

static plx_status allocate(plx_tensor_handle *h) {
    if (!h->owned) {
        h->owned = h->host->alloc(h->host, h->bytes, 16);
        if (!h->owned) {
            return h->host->status_create(h->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
        }
        memset(h->owned, 0, h->bytes);
    }
    h->data = h->owned;
    return NULL;
}

static plx_status map(plx_tensor_handle *h, void **out) {
    if (!h->data) {
        return h->host->status_create(h->host, PLX_FAILED_PRECONDITION, QD_ID ": no memory");
    }
    *out = h->data;
    return NULL;
}

static void unmap(plx_tensor_handle *h) {
    (void)h;
}

static plx_status import(plx_tensor_handle *h, void *mem, size_t size, plx_memory_source src) {
    if (src != PLX_MEMORY_SOURCE_MALLOC) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      QD_ID ": cannot import memory source %d", (int)src);
    }
    if (size < h->bytes || (uintptr_t)mem % 4) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      QD_ID ": imported memory too small or misaligned");
    }
    h->data = mem;
    return NULL;
}

static void unimport(plx_tensor_handle *h) {
    h->data = h->owned;
}

static plx_status create_workload(plx_factory *f, const plx_layer_view *l,
                                  plx_tensor_handle *const *in, plx_tensor_handle *const *out,
                                  plx_workload **result) {
    int kind = kind_of(l);
    if (kind < 0) {
        return f->host->status_create(f->host, PLX_UNSUPPORTED, QD_ID ": unsupported layer");
    }
    plx_workload *w = f->host->alloc(f->host, sizeof *w, 0);
    if (!w) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    memset(w, 0, sizeof *w);
    w->host = f->host;
    w->kind = (enum kind)kind;
    w->fail_on_negative = kind == RELU && strncmp(l->name, "fail", 4) == 0;
    w->refuse_enqueue = strncmp(l->name, "noenq", 5) == 0;
    size_t bytes = 0;
    plx_tensor_info_byte_size(&l->outputs[0], &bytes);
    w->elements = bytes / sizeof(float);
    w->constant = kind == CONSTANT ? ((const plx_constant_desc *)l->desc)->data : NULL;
    for (uint32_t i = 0; i < l->input_count && i < 2; i++) {
        w->in[i] = in[i];
    }
    w->out = out[0];
    snprintf(w->name, sizeof w->name, "%s", l->name);
    *result = w;
    return NULL;
}

static void destroy_workload(plx_workload *w) {
    w->host->free(w->host, w);
}

/* Runs the kernel. false on failure, with the message in `message`. */
static bool run_kernel(plx_workload *w, char *message, size_t size) {
    float *y = w->out->data;
    switch (w->kind) {
    case CONSTANT:
        memcpy(y, w->constant, w->elements * sizeof(float));
        break;
    case RELU:
        if (w->fail_on_negative && ((const float *)w->in[0]->data)[0] < 0) {
            snprintf(message, size, "layer '%s': negative input", w->name);
            memset(y, 0, w->elements * sizeof(float));
            return false;
        }
        for (size_t i = 0; i < w->elements; i++) {
            float x = ((const float *)w->in[0]->data)[i];
            y[i] = x > 0 ? x : 0;
        }
        break;
    case ADD:
        for (size_t i = 0; i < w->elements; i++) {
            y[i] = ((const float *)w->in[0]->data)[i] + ((const float *)w->in[1]->data)[i];
        }
        break;
    }
    return true;
}

/* The synchronous path: constants at load, and a host that does not queue. */
static plx_status execute(plx_workload *w) {
    char message[QD_MESSAGE];
    if (!run_kernel(w, message, sizeof message)) {
        return w->host->status_create(w->host, PLX_INVALID_ARGUMENT, "%s", message);
    }
    return NULL;
}

/* ---- Queues and events (R-25) ------------------------------------ */

static bool host_records_events(const plx_host *host) {
    return host->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_host, record_event) && host->now_ns &&
           host->record_event;
}

/* The backend's clock: the host's, offset on purpose. */
static uint64_t backend_clock(const plx_host *host) {
    return host->now_ns(host) + QD_CLOCK_OFFSET_NS;
}

static void sleep_us(unsigned us) {
    struct timespec t = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* Runs one item on the worker thread, holding no lock. Returns false with
 * the failure's code and message when the item failed or was not run. */
static bool run_item(plx_queue *q, const qd_item *it, plx_status_code *code, char *message,
                     size_t size) {
    bool ok = true;
    /* Wait for every wait fence; the first failure among them is ours. */
    for (uint32_t i = 0; i < it->wait_count; i++) {
        qd_fence *f = it->waits[i];
        plx_backend *owner = f->owner;
        pthread_mutex_lock(&owner->mu);
        while (!f->signalled) {
            pthread_cond_wait(&owner->fence_cv, &owner->mu);
        }
        if (f->failed && ok) {
            ok = false;
            *code = f->code;
            snprintf(message, size, "%s", f->message);
        }
        fence_unref_locked(f);
        pthread_mutex_unlock(&owner->mu);
    }
    plx_workload *w = it->workload;
    if (!ok) {
        memset(w->out->data, 0, w->elements * sizeof(float));
        return false;
    }
    if (q->backend->delay_us) {
        sleep_us(q->backend->delay_us);
    }
    bool profile = it->profile && host_records_events(q->host);
    uint64_t start = profile ? backend_clock(q->host) : 0;
    if (!run_kernel(w, message, size)) {
        *code = PLX_INVALID_ARGUMENT;
        ok = false;
    }
    if (profile) {
        uint64_t end = backend_clock(q->host);
        uint64_t sync_host = q->host->now_ns(q->host);
        plx_profile_event e;
        memset(&e, 0, sizeof e);
        e.struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_profile_event, clock_sync_host_ns);
        e.network_id = q->network_id;
        e.name = w->kind == ADD ? "qd_add" : w->kind == RELU ? "qd_relu" : "qd_constant";
        e.category = "kernel";
        e.layer = it->layer;
        e.start_ns = start;
        e.duration_ns = end - start;
        e.clock_sync_host_ns = sync_host;
        e.clock_sync_backend_ns = sync_host + QD_CLOCK_OFFSET_NS;
        q->host->record_event(q->host, &e);
    }
    return ok;
}

static void *worker(void *arg) {
    plx_queue *q = arg;
    plx_backend *b = q->backend;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (q->completed == q->enqueued && !q->stop) {
            pthread_cond_wait(&q->work_cv, &b->mu);
        }
        if (q->completed == q->enqueued) {
            break; /* stopped and drained */
        }
        qd_item it = q->ring[q->completed % QD_RING];
        pthread_mutex_unlock(&b->mu);

        plx_status_code code = PLX_OK;
        char message[QD_MESSAGE];
        bool ok = run_item(q, &it, &code, message, sizeof message);

        pthread_mutex_lock(&b->mu);
        q->completed++;
        qd_fence *e = it.epoch;
        if (!ok) {
            fence_fail_locked(e, code, message);
        }
        if (e->closed && q->completed >= e->end && !e->signalled) {
            e->signalled = true;
            pthread_cond_broadcast(&b->fence_cv);
        }
        fence_unref_locked(e);
        pthread_cond_broadcast(&q->space_cv);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static plx_status create_queue(plx_factory *f, const plx_queue_params *params,
                               plx_queue **out) {
    plx_backend *b = f->backend;
    plx_queue *q = b->host->alloc(b->host, sizeof *q, 0);
    if (!q) {
        return b->host->status_create(b->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    memset(q, 0, sizeof *q);
    q->backend = b;
    q->host = b->host;
    q->network_id = params && params->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_queue_params,
                                                                           network_id)
                        ? params->network_id
                        : 0;
    pthread_mutex_lock(&b->mu);
    q->open = fence_get(b);
    pthread_mutex_unlock(&b->mu);
    if (!q->open) {
        b->host->free(b->host, q);
        return b->host->status_create(b->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    if (pthread_cond_init(&q->work_cv, NULL) != 0) {
        goto no_cond;
    }
    if (pthread_cond_init(&q->space_cv, NULL) != 0) {
        pthread_cond_destroy(&q->work_cv);
        goto no_cond;
    }
    int err = pthread_create(&q->thread, NULL, worker, q);
    if (err != 0) {
        pthread_cond_destroy(&q->space_cv);
        pthread_cond_destroy(&q->work_cv);
        fence_unref(q->open);
        b->host->free(b->host, q);
        return b->host->status_create(b->host, PLX_UNAVAILABLE,
                                      QD_ID ": cannot start the queue's worker thread: %s",
                                      strerror(err));
    }
    *out = q;
    return NULL;
no_cond:
    fence_unref(q->open);
    b->host->free(b->host, q);
    return b->host->status_create(b->host, PLX_INTERNAL, QD_ID ": pthread_cond_init failed");
}

static void destroy_queue(plx_queue *q) {
    plx_backend *b = q->backend;
    pthread_mutex_lock(&b->mu);
    q->stop = true;
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(q->thread, NULL);
    fence_unref(q->open);
    pthread_cond_destroy(&q->space_cv);
    pthread_cond_destroy(&q->work_cv);
    b->host->free(b->host, q);
}

/* Whether this backend's work may wait on `f`: its own fence, or one of a
 * queuedev build reporting the same (non-empty) fence domain. */
static bool accepts_fence(const plx_backend *b, const qd_fence *f) {
    if (!f || f->magic != QD_FENCE_MAGIC) {
        return false;
    }
    if (f->owner == b) {
        return true;
    }
    return b->has_domain && f->owner->has_domain && b->domain[0] != '\0' &&
           strcmp(b->domain, f->owner->domain) == 0;
}

static plx_status enqueue_workload(plx_queue *q, const plx_enqueue_params *p) {
    plx_backend *b = q->backend;
    const plx_host *host = q->host;
    if (!p || p->struct_size < PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, profile) || !p->workload ||
        !p->layer_name) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   QD_ID ": enqueue parameters too small or incomplete");
    }
    plx_workload *w = p->workload;
    if (w->refuse_enqueue) {
        return host->status_create(host, PLX_UNAVAILABLE,
                                   QD_ID ": layer '%s' refuses to be enqueued (its name starts "
                                         "with noenq)",
                                   p->layer_name);
    }
    if (p->wait_fence_count > QD_MAX_WAITS || (p->wait_fence_count && !p->wait_fences)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   QD_ID ": layer '%s': %u wait fences (at most %d)",
                                   p->layer_name, p->wait_fence_count, QD_MAX_WAITS);
    }
    for (uint32_t i = 0; i < p->wait_fence_count; i++) {
        if (!accepts_fence(b, p->wait_fences[i])) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       QD_ID ": layer '%s': wait fence %u is not a fence of "
                                             "fence domain '%s'",
                                       p->layer_name, i, b->has_domain ? b->domain : "");
        }
    }
    qd_item it;
    memset(&it, 0, sizeof it);
    it.workload = w;
    it.layer = p->layer_name;
    it.profile = p->profile;
    it.wait_count = p->wait_fence_count;
    for (uint32_t i = 0; i < p->wait_fence_count; i++) {
        it.waits[i] = p->wait_fences[i];
        fence_ref(it.waits[i]); /* the host may destroy its handle on return */
    }
    pthread_mutex_lock(&b->mu);
    while (q->enqueued - q->completed == QD_RING) {
        pthread_cond_wait(&q->space_cv, &b->mu);
    }
    it.epoch = q->open;
    q->open->refs++;
    q->ring[q->enqueued % QD_RING] = it;
    q->enqueued++;
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static plx_status queue_signal(plx_queue *q, plx_fence **out) {
    plx_backend *b = q->backend;
    pthread_mutex_lock(&b->mu);
    qd_fence *next = fence_get(b);
    if (!next) {
        pthread_mutex_unlock(&b->mu);
        return q->host->status_create(q->host, PLX_OUT_OF_MEMORY, QD_ID ": out of memory");
    }
    qd_fence *f = q->open;
    f->closed = true;
    f->end = q->enqueued;
    if (q->completed >= f->end) {
        f->signalled = true;
        pthread_cond_broadcast(&b->fence_cv);
    }
    /* The queue's reference passes to the host's handle. */
    q->open = next;
    pthread_mutex_unlock(&b->mu);
    *out = f;
    return NULL;
}

static plx_status fence_wait(plx_fence *f) {
    plx_backend *b = f->owner;
    pthread_mutex_lock(&b->mu);
    while (!f->signalled) {
        pthread_cond_wait(&b->fence_cv, &b->mu);
    }
    bool failed = f->failed;
    plx_status_code code = f->code;
    char message[QD_MESSAGE];
    memcpy(message, f->message, sizeof message);
    pthread_mutex_unlock(&b->mu);
    return failed ? b->host->status_create(b->host, code, "%s", message) : NULL;
}

static plx_status fence_query(plx_fence *f, bool *out) {
    plx_backend *b = f->owner;
    pthread_mutex_lock(&b->mu);
    *out = f->signalled;
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static void destroy_fence(plx_fence *f) {
    fence_unref(f);
}

/* The R-24 group in plx_backend_functions order; QD_OMIT indexes it. */
#define QD_FN(index, fn) (QD_OMIT == (index) ? NULL : (fn))

static const plx_backend_functions functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, destroy_fence),
    .create = create,
    .destroy = destroy,
    .get_capabilities = get_capabilities,
    .check_layer = check_layer,
    .create_factory = create_factory,
    .destroy_factory = destroy_factory,
    .create_tensor_handle = create_handle,
    .destroy_tensor_handle = destroy_handle,
    .allocate_tensor_handle = allocate,
    .release_tensor_handle = release,
    .map_tensor_handle = map,
    .unmap_tensor_handle = unmap,
    .import_tensor_handle = import,
    .unimport_tensor_handle = unimport,
    .create_workload = create_workload,
    .destroy_workload = destroy_workload,
    .execute_workload = execute,
    .create_queue = QD_FN(0, create_queue),
    .destroy_queue = QD_FN(1, destroy_queue),
    .enqueue_workload = QD_FN(2, enqueue_workload),
    .queue_signal = QD_FN(3, queue_signal),
    .fence_wait = QD_FN(4, fence_wait),
    .fence_query = QD_FN(5, fence_query),
    .destroy_fence = QD_FN(6, destroy_fence),
};

static const plx_backend_descriptor descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = QD_ID,
    .name = "Queued test device (" QD_ID ")",
    .version = "1.0.0",
    .functions = &functions,
    .options = options,
    .option_count = sizeof options / sizeof options[0],
};

const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    (void)host;
    return PLX_ABI_VERSION_GET_MAJOR(host_abi_version) == PLX_ABI_VERSION_MAJOR ? &descriptor
                                                                                  : NULL;
}
