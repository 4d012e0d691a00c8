/* One source, one planted bug per build: the backends that prove each check
 * of `plexus conformance` can fail (tests/test_conformance.c,
 * docs/conformance.md). Without a switch it is a correct backend that runs
 * relu and same-shape add in float32, in host memory, refuses every other
 * layer with a reason, reports async_execution, externally_managed_memory,
 * malloc and dma-buf import, preimport_io_tensors and
 * allocates_planned_memory (its planned buffers host->alloc'd), records
 * one profiling event per execution, replaces an add whose only
 * reader is a relu by one layer of its own (optimize_subgraph, R-23), and
 * passes every check. Each switch breaks
 * one requirement of docs/backend-abi.md:
 *
 *   BUGGY_WRONG_RESULT     relu lets small negatives through
 *   BUGGY_UNSTABLE_REFUSAL a refusal's reason changes at each call (R-18 (1))
 *   BUGGY_REASON_ID        reasons name the backend id, which the host adds (R-18 (1))
 *   BUGGY_EMPTY_REASON     refusals without a reason (R-18 (1))
 *   BUGGY_CAP_WRONG_TYPE   async_execution reported as an integer
 *   BUGGY_SHARED_SCRATCH   workloads share one static scratch buffer while
 *                          claiming async_execution
 *   BUGGY_LEAK             destroy_factory leaves the factory allocated
 *   BUGGY_STEADY_ALLOC     every execution allocates through the host (R-18 (7))
 *   BUGGY_IMPORT_IGNORED   a dma-buf import ignores the memory it is given and
 *                          works in a buffer of its own
 *   BUGGY_PREIMPORT_STALE  caller memory (a malloc import) imported again at the
 *                          same address is read from a copy of its first
 *                          values, as if importing the same memory again
 *                          could skip the reading (R-17 (6), pre-imported
 *                          inputs)
 *   BUGGY_PLANNED_KEPT     free_planned_buffer keeps the buffer until the factory
 *                          is destroyed, so every release of a working memory
 *                          leaves its planned buffers allocated (R-26 (3))
 *   BUGGY_EVENT_CLOCK      profiling events timed on CLOCK_REALTIME without the
 *                          clock mapping to the host's (R-25 (3))
 *   BUGGY_FUSION_NO_RELU   the add and relu it substitutes run as the add alone
 *   BUGGY_SILENT_REFUSAL   refuses a host of another major without logging why
 *   BUGGY_EXPORTS          a helper exported beside plx_backend_entry (R-2 (1))
 *   BUGGY_LINKS_PLEXUS     calls libplexus's plx_abi_version, found in the host
 *                          process (built without -Wl,-z,defs)
 *
 * Built in a directory of its own (tests/plugins/buggy/meson.build), which
 * no registry test scans. Links nothing from libplexus, but for
 * BUGGY_LINKS_PLEXUS. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <plexus/backend.h>

#define BUGGY_ID "buggy"

struct plx_backend {
    const plx_host *host;
};

struct plx_factory {
    const plx_host *host;
    uint32_t network_id;
#ifdef BUGGY_PLANNED_KEPT
    void *kept[64]; /* "freed" planned buffers, given back at destroy_factory */
    size_t kept_count;
#endif
};

struct plx_tensor_handle {
    const plx_host *host;
    size_t bytes;
    bool managed;
    void *data;     /* owned (managed), imported, or mapped */
    void *own;      /* host->alloc'd: managed memory, or a buggy import's */
    void *mapped;   /* an imported dma-buf's mapping */
    size_t mapped_bytes;
    bool caller;    /* imported caller memory (malloc source) */
};

struct plx_workload {
    const plx_host *host;
    plx_op op;
    plx_tensor_handle *a, *b, *y;
    size_t count;
    uint32_t network_id;
    char layer[64]; /* the layer's name, for profiling events */
#ifdef BUGGY_PREIMPORT_STALE
    const void *stale_of; /* the address whose first values `stale` holds */
    float stale[256];
#endif
};

static const plx_capability caps[] = {
#ifdef BUGGY_CAP_WRONG_TYPE
    {PLX_CAP_ASYNC_EXECUTION, PLX_VALUE_INT, .int_value = 1},
#else
    {PLX_CAP_ASYNC_EXECUTION, PLX_VALUE_BOOL, .bool_value = true},
#endif
    {PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_VALUE_BOOL, .bool_value = true},
    {PLX_CAP_IMPORT_MALLOC, PLX_VALUE_BOOL, .bool_value = true},
    {PLX_CAP_IMPORT_DMA_BUF, PLX_VALUE_BOOL, .bool_value = true},
    {PLX_CAP_PREIMPORT_IO_TENSORS, PLX_VALUE_BOOL, .bool_value = true},
    {PLX_CAP_ALLOCATES_PLANNED_MEMORY, PLX_VALUE_BOOL, .bool_value = true},
};

static plx_status buggy_create(const plx_host *host, const plx_option *options,
                               size_t option_count, plx_backend **out_backend) {
    (void)options;
    (void)option_count;
    *out_backend = NULL;
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    b->host = host;
    *out_backend = b;
    return NULL;
}

static void buggy_destroy(plx_backend *backend) {
    backend->host->free(backend->host, backend);
}

static plx_status buggy_get_capabilities(plx_backend *backend,
                                         const plx_capability **out_capabilities,
                                         size_t *out_count) {
    (void)backend;
    *out_capabilities = caps;
    *out_count = sizeof caps / sizeof caps[0];
    return NULL;
}

/* R-18 (1): the reason says what the backend cannot do, without its id
 * (the host adds it), the same at every call. */
static plx_status refuse(const plx_host *host, const char *what) {
#if defined(BUGGY_UNSTABLE_REFUSAL)
    static atomic_uint calls;
    return host->status_create(host, PLX_UNSUPPORTED, "runs relu and add only, not %s "
                               "(refusal %u)", what, atomic_fetch_add(&calls, 1) + 1);
#elif defined(BUGGY_REASON_ID)
    /* at the start and inside, so that a host that drops a leading id
     * still shows it */
    return host->status_create(host, PLX_UNSUPPORTED, BUGGY_ID ": relu and add are all "
                               BUGGY_ID " runs, not %s", what);
#elif defined(BUGGY_EMPTY_REASON)
    (void)what;
    return host->status_create(host, PLX_UNSUPPORTED, "%s", "");
#else
    return host->status_create(host, PLX_UNSUPPORTED, "runs relu and add only, not %s", what);
#endif
}

/* The kind of the layer buggy_optimize_subgraph makes of an add and a relu. */
#define ADD_RELU_KIND "buggy.add_relu"

static plx_status buggy_check_layer(plx_backend *backend, const plx_layer_view *layer) {
    const plx_host *host = backend->host;
    for (uint32_t i = 0; i < layer->input_count; i++) {
        if (layer->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return refuse(host, "other dtypes than float32");
        }
    }
    if (layer->op == PLX_OP_ACTIVATION && layer->input_count == 1 &&
        ((const plx_activation_desc *)layer->desc)->func == PLX_ACT_RELU) {
        return NULL;
    }
    if (layer->op == PLX_OP_PRECOMPILED && layer->input_count == 2) {
        const plx_precompiled_desc *d = layer->desc;
        if (!d || !d->kind || strcmp(d->kind, ADD_RELU_KIND) != 0) {
            return refuse(host, "precompiled layers of other backends");
        }
        return plx_tensor_info_same_shape(&layer->inputs[0], &layer->inputs[1])
                   ? NULL
                   : refuse(host, "broadcasting add");
    }
    if (layer->op == PLX_OP_BINARY && layer->input_count == 2 &&
        ((const plx_binary_desc *)layer->desc)->func == PLX_BINARY_ADD) {
        return plx_tensor_info_same_shape(&layer->inputs[0], &layer->inputs[1])
                   ? NULL
                   : refuse(host, "broadcasting add");
    }
    return refuse(host, plx_op_name(layer->op));
}

static plx_status buggy_create_factory(plx_backend *backend, const plx_factory_params *params,
                                       plx_factory **out_factory) {
    const plx_host *host = backend->host;
    plx_factory *f = host->alloc(host, sizeof *f, 0);
    if (!f) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    f->host = host;
    f->network_id = params->network_id;
#ifdef BUGGY_PLANNED_KEPT
    f->kept_count = 0;
#endif
    *out_factory = f;
    return NULL;
}

#ifdef BUGGY_LEAK
/* Where the leaked factories go: never given back to the host, but still
 * reachable (the module is built with -z nodelete, so this array outlives
 * the runtime), so that LeakSanitizer and valgrind, which the test suite
 * runs the CLI under, do not report the planted leak as their own. */
static plx_factory *volatile graveyard[1024];
static atomic_uint graves;
#endif

static void buggy_destroy_factory(plx_factory *factory) {
#ifdef BUGGY_PLANNED_KEPT
    for (size_t i = 0; i < factory->kept_count; i++) {
        factory->host->free(factory->host, factory->kept[i]);
    }
#endif
#ifdef BUGGY_LEAK
    unsigned i = atomic_fetch_add(&graves, 1);
    if (i < sizeof graveyard / sizeof graveyard[0]) {
        graveyard[i] = factory;
    }
#else
    factory->host->free(factory->host, factory);
#endif
}

static plx_status buggy_create_tensor_handle(plx_factory *factory, const plx_tensor_info *info,
                                             const plx_tensor_handle_params *params,
                                             plx_tensor_handle **out_handle) {
    const plx_host *host = factory->host;
    size_t bytes;
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT, "tensor too large");
    }
    plx_tensor_handle *h = host->alloc(host, sizeof *h, 0);
    if (!h) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(h, 0, sizeof *h);
    h->host = host;
    h->bytes = bytes;
    h->managed = params->managed;
    *out_handle = h;
    return NULL;
}

static void buggy_unimport(plx_tensor_handle *h);

static void buggy_release_tensor_handle(plx_tensor_handle *h) {
    if (h->managed && h->own) {
        h->host->free(h->host, h->own);
        h->own = h->data = NULL;
    }
}

static void buggy_destroy_tensor_handle(plx_tensor_handle *h) {
    if (h->managed) {
        buggy_release_tensor_handle(h);
    } else {
        buggy_unimport(h);
    }
    h->host->free(h->host, h);
}

static plx_status buggy_allocate_tensor_handle(plx_tensor_handle *h) {
    h->own = h->host->alloc(h->host, h->bytes, 64);
    if (!h->own) {
        return h->host->status_create(h->host, PLX_OUT_OF_MEMORY, "out of memory (%zu bytes)",
                                      h->bytes);
    }
    h->data = h->own;
    return NULL;
}

static plx_status buggy_map(plx_tensor_handle *h, void **out_data) {
    if (!h->data) {
        return h->host->status_create(h->host, PLX_FAILED_PRECONDITION, "no memory to map");
    }
    *out_data = h->data;
    return NULL;
}

static void buggy_unmap(plx_tensor_handle *h) {
    (void)h;
}

static void buggy_unimport(plx_tensor_handle *h) {
    if (h->mapped) {
        munmap(h->mapped, h->mapped_bytes);
        h->mapped = NULL;
    }
    if (!h->managed && h->own) {
        h->host->free(h->host, h->own);
        h->own = NULL;
    }
    h->data = NULL;
    h->caller = false;
}

/* R-17 (6), R-22: malloc memory used in place; a dma-buf mapped shared. */
static plx_status buggy_import(plx_tensor_handle *h, void *memory, size_t size,
                               plx_memory_source source) {
    const plx_host *host = h->host;
    if (size < h->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%zu bytes imported for a tensor of %zu", size, h->bytes);
    }
    buggy_unimport(h);
    if (source == PLX_MEMORY_SOURCE_MALLOC) {
        h->data = memory;
        h->caller = true;
        return NULL;
    }
    if (source != PLX_MEMORY_SOURCE_DMA_BUF) {
        return host->status_create(host, PLX_INVALID_ARGUMENT, "memory source %u not imported",
                                   (unsigned)source);
    }
#ifdef BUGGY_IMPORT_IGNORED
    h->own = host->alloc(host, h->bytes ? h->bytes : 1, 64);
    if (!h->own) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(h->own, 0, h->bytes);
    h->data = h->own;
    return NULL;
#else
    int fd;
    memcpy(&fd, memory, sizeof fd);
    size_t n = h->bytes ? h->bytes : 1;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        return host->status_create(host, PLX_INVALID_ARGUMENT, "cannot map dma-buf fd %d", fd);
    }
    h->mapped = h->data = p;
    h->mapped_bytes = n;
    return NULL;
#endif
}

/* R-26 (3): a planned buffer, host memory from the host table. */
static plx_status buggy_allocate_planned_buffer(plx_factory *factory,
                                                const plx_planned_buffer_params *params,
                                                plx_external_memory *out_memory) {
    const plx_host *host = factory->host;
    size_t alignment = params->alignment > 64 ? (size_t)params->alignment : 64;
    if (params->size != (uint64_t)(size_t)params->size) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "planned buffer too large");
    }
    void *p = host->alloc(host, (size_t)params->size, alignment);
    if (!p) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory (%llu bytes)",
                                   (unsigned long long)params->size);
    }
    out_memory->kind = PLX_MEMORY_KIND_HOST;
    out_memory->handle = p;
    out_memory->fd = -1;
    out_memory->offset = 0;
    out_memory->size = params->size;
    return NULL;
}

static void buggy_free_planned_buffer(plx_factory *factory, const plx_external_memory *memory) {
#ifdef BUGGY_PLANNED_KEPT
    if (factory->kept_count < sizeof factory->kept / sizeof factory->kept[0]) {
        factory->kept[factory->kept_count++] = memory->handle;
        return;
    }
#endif
    factory->host->free(factory->host, memory->handle);
}

/* Binds part of a planned buffer (host memory) to an unmanaged handle. */
static plx_status buggy_import_external_memory(plx_tensor_handle *h,
                                               const plx_external_memory *memory) {
    const plx_host *host = h->host;
    if (!memory->kind || strcmp(memory->kind, PLX_MEMORY_KIND_HOST) != 0 || !memory->handle) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "takes host memory only, not kind '%s'",
                                   memory->kind ? memory->kind : "(none)");
    }
    if (memory->size < h->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "%llu bytes imported for a tensor of %zu",
                                   (unsigned long long)memory->size, h->bytes);
    }
    buggy_unimport(h);
    h->data = (char *)memory->handle + memory->offset;
    return NULL;
}

static plx_status buggy_create_workload(plx_factory *factory, const plx_layer_view *layer,
                                        plx_tensor_handle *const *inputs,
                                        plx_tensor_handle *const *outputs,
                                        plx_workload **out_workload) {
    const plx_host *host = factory->host;
    plx_workload *w = host->alloc(host, sizeof *w, 0);
    if (!w) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    w->host = host;
    w->op = layer->op;
    w->a = inputs[0];
    w->b = layer->input_count > 1 ? inputs[1] : NULL;
    w->y = outputs[0];
    w->count = outputs[0]->bytes / sizeof(float);
    w->network_id = factory->network_id;
    snprintf(w->layer, sizeof w->layer, "%s", layer->name ? layer->name : "");
#ifdef BUGGY_PREIMPORT_STALE
    w->stale_of = NULL;
#endif
    *out_workload = w;
    return NULL;
}

static void buggy_destroy_workload(plx_workload *w) {
    w->host->free(w->host, w);
}

#ifdef BUGGY_SHARED_SCRATCH
/* Shared by every workload of every working memory: a race under
 * async_execution, the window widened so that concurrent executions meet
 * in it. */
static float scratch[4096];
#endif

/* one event per execution, when the host table has record_event
 * (ABI 1.4); the host drops it at once while it records no trace. */
static bool can_record(const plx_host *host) {
    return host->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_host, record_event) && host->now_ns &&
           host->record_event;
}

static uint64_t event_clock(const plx_host *host) {
#ifdef BUGGY_EVENT_CLOCK
    /* a clock of its own, given without the mapping to the host's */
    (void)host;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
    return host->now_ns(host);
#endif
}

static plx_status buggy_execute(plx_workload *w) {
    uint64_t start = can_record(w->host) ? event_clock(w->host) : 0;
    const float *a = w->a->data, *b = w->b ? w->b->data : NULL;
    float *y = w->y->data;
    if (!a || !y || (w->b && !b)) {
        return w->host->status_create(w->host, PLX_FAILED_PRECONDITION, "unbound tensor");
    }
#ifdef BUGGY_STEADY_ALLOC
    void *tmp = w->host->alloc(w->host, 64, 0);
    w->host->free(w->host, tmp);
#endif
#ifdef BUGGY_PREIMPORT_STALE
    if (w->a->caller && w->count <= sizeof w->stale / sizeof w->stale[0]) {
        if (a != w->stale_of) {
            memcpy(w->stale, a, w->count * sizeof *a);
            w->stale_of = a;
        }
        a = w->stale;
    }
#endif
#ifdef BUGGY_SHARED_SCRATCH
    float *out = w->count <= sizeof scratch / sizeof scratch[0] ? scratch : y;
#else
    float *out = y;
#endif
    for (size_t i = 0; i < w->count; i++) {
        if (w->op == PLX_OP_BINARY) {
            out[i] = a[i] + b[i];
        } else if (w->op == PLX_OP_PRECOMPILED) {
            float v = a[i] + b[i];
#ifdef BUGGY_FUSION_NO_RELU
            out[i] = v;
#else
            out[i] = v < 0.0f ? 0.0f : v;
#endif
        } else {
#ifdef BUGGY_WRONG_RESULT
            out[i] = a[i] > -0.5f ? a[i] : 0.0f;
#else
            out[i] = a[i] < 0.0f ? 0.0f : a[i]; /* NaN passes, as ONNX's max(0, x) */
#endif
        }
    }
#ifdef BUGGY_SHARED_SCRATCH
    if (out != y) {
        nanosleep(&(struct timespec){0, 200000}, NULL);
        memcpy(y, out, w->count * sizeof *y);
    }
#endif
    if (can_record(w->host)) {
        plx_profile_event e;
        memset(&e, 0, sizeof e);
        e.struct_size = PLX_STRUCT_SIZE_UPTO(plx_profile_event, clock_sync_host_ns);
        e.network_id = w->network_id;
        e.name = w->op == PLX_OP_BINARY        ? "buggy_add"
                 : w->op == PLX_OP_PRECOMPILED ? "buggy_add_relu"
                                               : "buggy_relu";
        e.category = "kernel";
        e.layer = w->layer;
        e.start_ns = start;
        e.duration_ns = event_clock(w->host) - start;
        w->host->record_event(w->host, &e); /* both clock_sync fields 0: host time */
    }
    return NULL;
}

/* an add whose output only a relu reads becomes one precompiled
 * layer of kind ADD_RELU_KIND, reading the add's two inputs. */
static plx_status buggy_optimize_subgraph(plx_backend *backend, const plx_subgraph_view *g,
                                          const plx_subgraph_editor *editor) {
    (void)backend;
    for (uint32_t a = 0; a < g->layer_count; a++) {
        const plx_subgraph_layer *add = &g->layers[a];
        if (add->view.op != PLX_OP_BINARY || add->view.input_count != 2 ||
            (add->inputs[0].layer == add->inputs[1].layer &&
             add->inputs[0].slot == add->inputs[1].slot)) {
            continue;
        }
        uint32_t r = plx_subgraph_sole_reader(g, a, NULL);
        if (r == UINT32_MAX || g->layers[r].view.op != PLX_OP_ACTIVATION ||
            ((const plx_activation_desc *)g->layers[r].view.desc)->func != PLX_ACT_RELU) {
            continue;
        }
        uint32_t layers[2] = {a, r};
        plx_subgraph_source out = {r, 0};
        plx_substitution sub = {
            .struct_size = sizeof sub,
            .layers = layers,
            .layer_count = 2,
            .inputs = add->inputs,
            .input_count = 2,
            .outputs = &out,
            .output_count = 1,
            .kind = ADD_RELU_KIND,
        };
        plx_status s = editor->substitute(editor, &sub);
        if (s) {
            return s;
        }
    }
    return NULL;
}

static const plx_backend_functions buggy_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, import_external_memory),
    .create = buggy_create,
    .destroy = buggy_destroy,
    .get_capabilities = buggy_get_capabilities,
    .check_layer = buggy_check_layer,
    .create_factory = buggy_create_factory,
    .destroy_factory = buggy_destroy_factory,
    .create_tensor_handle = buggy_create_tensor_handle,
    .destroy_tensor_handle = buggy_destroy_tensor_handle,
    .allocate_tensor_handle = buggy_allocate_tensor_handle,
    .release_tensor_handle = buggy_release_tensor_handle,
    .map_tensor_handle = buggy_map,
    .unmap_tensor_handle = buggy_unmap,
    .import_tensor_handle = buggy_import,
    .unimport_tensor_handle = buggy_unimport,
    .create_workload = buggy_create_workload,
    .destroy_workload = buggy_destroy_workload,
    .execute_workload = buggy_execute,
    .optimize_subgraph = buggy_optimize_subgraph,
    .allocate_planned_buffer = buggy_allocate_planned_buffer,
    .free_planned_buffer = buggy_free_planned_buffer,
    .import_external_memory = buggy_import_external_memory,
};

static const plx_backend_descriptor buggy_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = BUGGY_ID,
    .name = "Conformance test backend",
    .version = "1.0.0",
    .functions = &buggy_functions,
};

#ifdef BUGGY_EXPORTS
/* An exported helper: visible to every other plug-in and the application. */
PLX_BACKEND_EXPORT int buggy_helper(int x);
PLX_BACKEND_EXPORT int buggy_helper(int x) {
    return x + 1;
}
#endif

#ifdef BUGGY_LINKS_PLEXUS
/* The application API, which a backend never calls. */
uint32_t plx_abi_version(void);
#endif

PLX_BACKEND_EXPORT const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version,
                                                                   const plx_host *host) {
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
#ifdef BUGGY_SILENT_REFUSAL
        (void)host;
#else
        host->log(host, PLX_LOG_ERROR, "built for ABI major %u", PLX_ABI_VERSION_MAJOR);
#endif
        return NULL;
    }
#ifdef BUGGY_LINKS_PLEXUS
    if (plx_abi_version() != host_abi_version) {
        return NULL;
    }
#endif
    return &buggy_descriptor;
}
