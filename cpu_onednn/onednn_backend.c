/* cpu_onednn: a CPU backend on oneDNN (Debian's libdnnl, 2.6), as a plug-in
 * built with the SDK alone (docs/cpu_onednn.md).
 *
 * The entry point, descriptor, options and capabilities, and the ABI 1.1
 * objects: factories, tensor handles in plain host memory (row-major, the
 * layout the host maps), workloads that run the oneDNN primitives that
 * onednn_graph.c plans for their layer or graph, and the graph optimisation
 * that makes graphs. Each workload creates its primitives, arena and
 * scratchpad once, at creation, and shares the weights its factory packed
 * (once per network); executing binds the handles' current memory and runs
 * the primitives, with no allocation. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plexus/backend.h>
#include <plexus/host_tensor.h>

#include "onednn_internal.h"

/* Debian's oneDNN is built with GNU OpenMP (DNNL_CPU_RUNTIME OMP): a
 * primitive runs on the calling thread's OpenMP team, whose size is that
 * thread's nthreads ICV. These two functions of the OpenMP API (libgomp,
 * which libdnnl itself links) set and read it; see odn_threads_enter. */
extern int omp_get_max_threads(void);
extern void omp_set_num_threads(int n);

#define ODN_MAX_THREADS 256
#define ODN_ALIGNMENT 64

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
    dnnl_engine_t engine; /* thread-safe; shared by every factory */
    int threads;
    bool graph; /* option `graph` */
    bool reference; /* option `reference` (odn_context) */
    bool exact_nan; /* option `exact_nan` (odn_context) */
    bool vnni;      /* the CPU has VNNI: int8 layers run (odn_context) */
    char version[64];
    char isa[32];
    char runtime[16];
    char wait_policy[32];
    plx_capability caps[10];
    size_t cap_count;
};

static const plx_option_info odn_options[] = {
    {"threads", "threads per execution, 1 to 256 (oneDNN's OpenMP team size); unset: all "
                "online CPUs", NULL},
    {"graph", "on: each subgraph assigned to cpu_onednn runs as one layer, its activations "
              "kept in oneDNN's blocked layouts; off: layer by layer, products fused with "
              "their activations", "on"},
    {"reference", "on: layers for which oneDNN offers only its reference implementation (plain "
                  "loops), its plain-layout batch norm (ncsp_bnorm) or its element-by-element "
                  "concat (simple:any), run here; off: they are refused and go to the next "
                  "backend",
     "off"},
    {"exact_nan", "on: the layers whose oneDNN kernels turn NaN into a number (relu, clip and "
                  "hard sigmoid, alone or fused; max pooling; max and min reductions and "
                  "elementwise max and min; softmax and log-softmax) are refused and go to the "
                  "next backend, so that NaN gives what every backend gives; off: they run here",
     "off"},
};

/* ---- oneDNN facts ------------------------------------------------------- */

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
    }
}

static const char *runtime_name(unsigned rt) {
    switch (rt) {
    case DNNL_RUNTIME_SEQ: return "seq";
    case DNNL_RUNTIME_OMP: return "omp";
    case DNNL_RUNTIME_TBB: return "tbb";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    default: return "unknown";
    }
}

/* the library must answer, run its CPU engine, and use a threading
 * runtime whose team size this backend controls (OpenMP, or sequential). */
static plx_status odn_check_available(const plx_host *host) {
    const dnnl_version_t *v = dnnl_version();
    if (!v) {
        return host->status_create(host, PLX_UNAVAILABLE, "cpu_onednn: dnnl_version() gave "
                                                          "nothing");
    }
    if (v->major != DNNL_VERSION_MAJOR) {
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "cpu_onednn was built for oneDNN %d.x, the library is %d.%d.%d",
                                   DNNL_VERSION_MAJOR, v->major, v->minor, v->patch);
    }
    if (v->cpu_runtime != DNNL_RUNTIME_OMP && v->cpu_runtime != DNNL_RUNTIME_SEQ) {
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "cpu_onednn: oneDNN's CPU runtime is %s; cpu_onednn controls "
                                   "OpenMP (or sequential) threading only",
                                   runtime_name(v->cpu_runtime));
    }
    if (dnnl_engine_get_count(dnnl_cpu) == 0) {
        return host->status_create(host, PLX_UNAVAILABLE, "cpu_onednn: oneDNN has no CPU engine");
    }
    dnnl_engine_t e = NULL;
    dnnl_status_t st = dnnl_engine_create(&e, dnnl_cpu, 0);
    if (st != dnnl_success) {
        return odn_status(host, PLX_UNAVAILABLE, "dnnl_engine_create", st);
    }
    dnnl_engine_destroy(e);
    return NULL;
}

/* ---- instance ----------------------------------------------------------- */

/* "threads" is a decimal integer from 1 to 256. */
static plx_status parse_threads(const plx_host *host, const char *value, int *out) {
    char *end = NULL;
    errno = 0;
    long n = value ? strtol(value, &end, 10) : 0;
    if (!value || !*value || errno || *end || n < 1 || n > ODN_MAX_THREADS) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "invalid value '%s' for option 'threads' of backend "
                                   "'cpu_onednn': expected an integer from 1 to %d",
                                   value ? value : "", ODN_MAX_THREADS);
    }
    *out = (int)n;
    return NULL;
}

static plx_status odn_create(const plx_host *host, const plx_option *options,
                             size_t option_count, plx_backend **out_backend) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cpus < 1 ? 1 : cpus > ODN_MAX_THREADS ? ODN_MAX_THREADS : (int)cpus;
    bool graph = true, reference = false, exact_nan = false;
    for (size_t i = 0; i < option_count; i++) {
        const char *v = options[i].value ? options[i].value : "";
        if (strcmp(options[i].key, "threads") == 0) {
            plx_status s = parse_threads(host, options[i].value, &threads);
            if (s) {
                return s;
            }
        } else if (strcmp(options[i].key, "graph") == 0 ||
                   strcmp(options[i].key, "reference") == 0 ||
                   strcmp(options[i].key, "exact_nan") == 0) {
            if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "invalid value '%s' for option '%s' of backend "
                                           "'cpu_onednn': expected on or off", v, options[i].key);
            }
            bool on = strcmp(v, "on") == 0;
            if (strcmp(options[i].key, "graph") == 0) {
                graph = on;
            } else if (strcmp(options[i].key, "reference") == 0) {
                reference = on;
            } else {
                exact_nan = on;
            }
        }
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cpu_onednn: cannot allocate the backend instance");
    }
    memset(b, 0, sizeof *b);
    b->host = host;
    b->threads = threads;
    b->graph = graph;
    b->reference = reference;
    b->exact_nan = exact_nan;
    dnnl_status_t st = dnnl_engine_create(&b->engine, dnnl_cpu, 0);
    if (st != dnnl_success) {
        host->free(host, b);
        return odn_status(host, PLX_UNAVAILABLE, "dnnl_engine_create", st);
    }
    const dnnl_version_t *v = dnnl_version();
    bool hash = v->hash && *v->hash && strcmp(v->hash, "N/A") != 0;
    snprintf(b->version, sizeof b->version, "%d.%d.%d%s%s", v->major, v->minor, v->patch,
             hash ? "+" : "", hash ? v->hash : "");
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    snprintf(b->isa, sizeof b->isa, "%s", isa_name(isa));
    /* The ISA values are cumulative bit sets: VNNI is in each of these. */
    b->vnni = (isa & dnnl_cpu_isa_avx512_core_vnni) == dnnl_cpu_isa_avx512_core_vnni ||
              (isa & dnnl_cpu_isa_avx2_vnni) == dnnl_cpu_isa_avx2_vnni;
    snprintf(b->runtime, sizeof b->runtime, "%s", runtime_name(v->cpu_runtime));
    /* libgomp reads OMP_WAIT_POLICY once, when it is loaded (with libdnnl,
     * before this code runs): reported, not set (docs/cpu_onednn.md). */
    const char *wp = getenv("OMP_WAIT_POLICY");
    snprintf(b->wait_policy, sizeof b->wait_policy, "%s",
             v->cpu_runtime != DNNL_RUNTIME_OMP ? "none"
             : wp && *wp                         ? wp
                                                 : "default");
    /* R-10 (7): what is delivered. Handles are plain host memory at a fixed
     * address (export, R-17 (4)); they import any element-aligned malloc
     * memory (oneDNN's CPU primitives need no more); each workload has its
     * own stream, memories and scratchpad, and primitives are safe to run
     * concurrently, so different working memories execute concurrently. */
    size_t n = 0;
    b->caps[n++] = (plx_capability){.key = PLX_CAP_ASYNC_EXECUTION, .type = PLX_VALUE_BOOL,
                                    .bool_value = true};
    b->caps[n++] = (plx_capability){.key = PLX_CAP_EXTERNALLY_MANAGED_MEMORY,
                                    .type = PLX_VALUE_BOOL, .bool_value = true};
    b->caps[n++] = (plx_capability){.key = PLX_CAP_PREIMPORT_IO_TENSORS, .type = PLX_VALUE_BOOL,
                                    .bool_value = true};
    b->caps[n++] = (plx_capability){.key = PLX_CAP_IMPORT_MALLOC, .type = PLX_VALUE_BOOL,
                                    .bool_value = true};
    b->caps[n++] = (plx_capability){.key = PLX_CAP_EXPORT_MALLOC, .type = PLX_VALUE_BOOL,
                                    .bool_value = true};
    b->caps[n++] = (plx_capability){.key = "cpu_onednn.version", .type = PLX_VALUE_STRING,
                                    .string_value = b->version};
    b->caps[n++] = (plx_capability){.key = "cpu_onednn.isa", .type = PLX_VALUE_STRING,
                                    .string_value = b->isa};
    b->caps[n++] = (plx_capability){.key = "cpu_onednn.threads", .type = PLX_VALUE_INT,
                                    .int_value = threads};
    b->caps[n++] = (plx_capability){.key = "cpu_onednn.cpu_runtime", .type = PLX_VALUE_STRING,
                                    .string_value = b->runtime};
    b->caps[n++] = (plx_capability){.key = "cpu_onednn.omp_wait_policy",
                                    .type = PLX_VALUE_STRING, .string_value = b->wait_policy};
    b->cap_count = n;
    *out_backend = b;
    return NULL;
}

static void odn_destroy(plx_backend *backend) {
    if (backend) {
        dnnl_engine_destroy(backend->engine);
        backend->host->free(backend->host, backend);
    }
}

static plx_status odn_get_capabilities(plx_backend *backend,
                                       const plx_capability **out_capabilities,
                                       size_t *out_count) {
    *out_capabilities = backend->caps;
    *out_count = backend->cap_count;
    return NULL;
}

/* Threads: oneDNN (OpenMP runtime) forks a team of the calling thread's
 * nthreads ICV, which belongs to that thread alone. Every call that runs
 * primitives sets it to the backend's `threads` and restores the caller's
 * value afterwards, so an application's own OpenMP use is left alone and
 * concurrent executions on different threads each get their own team. */
static int odn_threads_enter(const plx_backend *b) {
    int prev = omp_get_max_threads();
    if (prev != b->threads) {
        omp_set_num_threads(b->threads);
    }
    return prev;
}

static void odn_threads_leave(const plx_backend *b, int prev) {
    if (prev != b->threads) {
        omp_set_num_threads(prev);
    }
}

/* ---- layers ------------------------------------------------------------- */

/* The planners' context of backend `b` (onednn_internal.h). */
static odn_context odn_context_of(const plx_backend *b, const plx_host *host) {
    odn_context ctx = {.host = host, .engine = b->engine, .reference = b->reference,
                       .exact_nan = b->exact_nan, .vnni = b->vnni, .isa = b->isa,
                       .input_mds = NULL};
    return ctx;
}

/* Constants: any dtype, copied into their handle once at load. */
static plx_status odn_check_layer(plx_backend *backend, const plx_layer_view *layer) {
    if (layer->op == PLX_OP_CONSTANT) {
        return NULL;
    }
    odn_context ctx = odn_context_of(backend, backend->host);
    odn_plan plan;
    memset(&plan, 0, sizeof plan);
    plx_status s = odn_graph_plan(&ctx, layer, &plan);
    odn_plan_free(&ctx, &plan);
    return s;
}

/* Constant weights packed into a primitive's layout, shared by the
 * workloads of every working memory of the network that use the same
 * constant in the same layout (they only read it). */
typedef struct odn_packed {
    struct odn_packed *next;
    const void *data;           /* the constant (valid while the network lives) */
    dnnl_memory_desc_t user_md; /* how it is read: its plain layout, or a transposed view */
    dnnl_memory_desc_t md;      /* the layout it is packed into */
    odn_unpack unpack;          /* how it was rearranged first (onednn_rnn.c) */
    void *buffer;
    unsigned refs; /* workloads using it */
} odn_packed;

/* One per loaded network: its packed weights. create_workload of a new
 * working memory runs beside destroy_workload of another (R-18 (4)), so
 * the list is under `lock`. */
struct plx_factory {
    /* first: what the SDK's tensor-handle functions need (host_tensor.h) */
    plx_host_tensor_factory tensors;
    plx_backend *backend;
    pthread_mutex_t lock;
    odn_packed *packed;
};

static plx_status odn_create_factory(plx_backend *backend, const plx_factory_params *params,
                                     plx_factory **out_factory) {
    (void)params;
    const plx_host *host = backend->host;
    plx_factory *f = host->alloc(host, sizeof *f, 0);
    if (!f) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
    }
    plx_host_tensor_factory_init(&f->tensors, host, ODN_ALIGNMENT);
    f->backend = backend;
    f->packed = NULL;
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        host->free(host, f);
        return host->status_create(host, PLX_INTERNAL, "cpu_onednn: pthread_mutex_init failed");
    }
    *out_factory = f;
    return NULL;
}

/* Every workload was destroyed before (R-16 (5)), so nothing is packed. */
static void odn_destroy_factory(plx_factory *factory) {
    pthread_mutex_destroy(&factory->lock);
    factory->tensors.host->free(factory->tensors.host, factory);
}

/* ---- tensor handles ----------------------------------------------------- */

/* Plain host memory, the SDK's ready-made handles (plexus/host_tensor.h):
 * owned (managed), imported (malloc), or a range of a parent's
 * (sub-tensors). Always dense row-major: map returns it as is. */
static void *handle_data(plx_tensor_handle *h) {
    return plx_host_tensor_data(plx_host_tensor_of(h));
}

/* Malloc memory is used in place (zero copy); element alignment suffices.
 * The handles could map dma-bufs too, but cpu_onednn does not report
 * memory_import_dma_buf (docs/cpu_onednn.md), so it takes malloc only. */
static plx_status odn_import_tensor_handle(plx_tensor_handle *h, void *memory, size_t size,
                                           plx_memory_source source) {
    plx_host_tensor *t = plx_host_tensor_of(h);
    if (source != PLX_MEMORY_SOURCE_MALLOC) {
        return t->host->status_create(t->host, PLX_INVALID_ARGUMENT,
                                      "cpu_onednn imports malloc memory only, not source %d",
                                      (int)source);
    }
    return plx_host_tensor_import(t, memory, size, source);
}

/* ---- workloads ---------------------------------------------------------- */

/* A workload owns its plan (primitive descriptors and bindings), one
 * primitive per step, one dnnl memory per plan memory (those bound to the
 * layer's handles get the handle's current address at each execution),
 * one arena for the internal memories (the activations between the layers
 * of a graph, laid out by their lifetimes), one scratchpad shared by its
 * steps, and its own stream. It shares with other workloads only the
 * engine, constant data and the factory's packed weights, all only read
 * while executing. */
typedef struct wl_step {
    dnnl_primitive_t prim;
    dnnl_memory_t scratch_mem;
    dnnl_exec_arg_t args[ODN_MAX_STEP_ARGS + 1];
    int arg_count;
} wl_step;

struct plx_workload {
    const plx_host *host;
    plx_backend *backend;
    /* constant layers */
    const void *constant_data;
    size_t constant_bytes;
    /* compute layers */
    odn_plan plan;
    wl_step *steps;      /* plan.step_count */
    dnnl_memory_t *mems; /* plan.mem_count */
    plx_factory *factory;
    odn_packed **packed; /* plan.mem_count: the factory's packed weights a mem uses */
    void *arena;         /* internal mems */
    size_t arena_bytes;
    void *scratch;
    dnnl_stream_t stream;
    plx_tensor_handle **inputs;
    plx_tensor_handle **outputs;
    unsigned input_count, output_count;
};

/* Drops a workload's use of packed weights; the last user frees them. */
static void release_packed(plx_factory *f, odn_packed *p) {
    pthread_mutex_lock(&f->lock);
    if (--p->refs == 0) {
        for (odn_packed **at = &f->packed; *at; at = &(*at)->next) {
            if (*at == p) {
                *at = p->next;
                break;
            }
        }
        f->tensors.host->free(f->tensors.host, p->buffer);
        f->tensors.host->free(f->tensors.host, p);
    }
    pthread_mutex_unlock(&f->lock);
}

static void odn_destroy_workload(plx_workload *w) {
    const plx_host *host = w->host;
    odn_context ctx = odn_context_of(w->backend, host);
    for (unsigned i = 0; w->steps && i < w->plan.step_count; i++) {
        if (w->steps[i].prim) {
            dnnl_primitive_destroy(w->steps[i].prim);
        }
        if (w->steps[i].scratch_mem) {
            dnnl_memory_destroy(w->steps[i].scratch_mem);
        }
    }
    for (unsigned i = 0; w->mems && i < w->plan.mem_count; i++) {
        if (w->mems[i]) {
            dnnl_memory_destroy(w->mems[i]);
        }
    }
    for (unsigned i = 0; w->packed && i < w->plan.mem_count; i++) {
        if (w->packed[i]) {
            release_packed(w->factory, w->packed[i]);
        }
    }
    if (w->stream) {
        dnnl_stream_destroy(w->stream);
    }
    host->free(host, w->steps);
    host->free(host, w->scratch);
    host->free(host, w->arena);
    host->free(host, w->mems);
    host->free(host, w->packed);
    host->free(host, w->inputs);
    host->free(host, w->outputs);
    odn_plan_free(&ctx, &w->plan);
    host->free(host, w);
}

/* Lays the internal memories of `plan` out in one arena: each gets an
 * offset (offsets[i], for ODN_BIND_INTERNAL mems) such that memories used
 * by overlapping ranges of steps do not overlap (aliases count as uses of
 * the memory they alias). First fit, largest first. Returns the arena's
 * size, or SIZE_MAX when out of memory. */
static size_t layout_arena(const plx_host *host, const odn_plan *plan, size_t *offsets) {
    unsigned n = plan->mem_count;
    unsigned *first = host->alloc(host, (n + 1) * sizeof *first, 0);
    unsigned *last = host->alloc(host, (n + 1) * sizeof *last, 0);
    unsigned *order = host->alloc(host, (n + 1) * sizeof *order, 0);
    size_t *sizes = host->alloc(host, (n + 1) * sizeof *sizes, 0);
    size_t total = SIZE_MAX;
    if (!first || !last || !order || !sizes) {
        goto done;
    }
    total = 0;
    unsigned count = 0;
    for (unsigned i = 0; i < n; i++) {
        first[i] = UINT32_MAX;
        last[i] = 0;
        sizes[i] = (dnnl_memory_desc_get_size(&plan->mems[i].md) + ODN_ALIGNMENT - 1) /
                   ODN_ALIGNMENT * ODN_ALIGNMENT;
        if (sizes[i] == 0) {
            sizes[i] = ODN_ALIGNMENT;
        }
    }
    for (unsigned k = 0; k < plan->step_count; k++) {
        for (unsigned a = 0; a < plan->steps[k].arg_count; a++) {
            unsigned m = plan->steps[k].args[a].mem;
            if (plan->mems[m].binding == ODN_BIND_ALIAS) {
                m = plan->mems[m].slot;
            }
            first[m] = k < first[m] ? k : first[m];
            last[m] = k > last[m] ? k : last[m];
        }
    }
    for (unsigned i = 0; i < n; i++) {
        if (plan->mems[i].binding == ODN_BIND_INTERNAL) {
            order[count++] = i;
        }
    }
    for (unsigned x = 1; x < count; x++) { /* by size, largest first */
        unsigned v = order[x], y = x;
        for (; y > 0 && sizes[order[y - 1]] < sizes[v]; y--) {
            order[y] = order[y - 1];
        }
        order[y] = v;
    }
    for (unsigned x = 0; x < count; x++) {
        unsigned m = order[x];
        size_t off = 0;
        bool moved = true;
        while (moved) { /* the lowest offset clear of every placed, live-overlapping one */
            moved = false;
            for (unsigned y = 0; y < x; y++) {
                unsigned o = order[y];
                bool live = first[m] <= last[o] && first[o] <= last[m];
                if (live && off < offsets[o] + sizes[o] && offsets[o] < off + sizes[m]) {
                    off = offsets[o] + sizes[o];
                    moved = true;
                }
            }
        }
        offsets[m] = off;
        total = off + sizes[m] > total ? off + sizes[m] : total;
    }
done:
    host->free(host, first);
    host->free(host, last);
    host->free(host, order);
    host->free(host, sizes);
    return total;
}

/* Reorders constant data (plain layout `user_md`, after m->unpack's
 * rearrangement) into `dst` (the layout `m->md` the primitive chose),
 * once, on the workload's stream. */
static plx_status pack_constant(plx_workload *w, const odn_mem *m, const void *data,
                                void *dst) {
    const plx_host *host = w->host;
    float *unpacked = NULL;
    if (m->unpack.kind != ODN_UNPACK_NONE) {
        size_t bytes = dnnl_memory_desc_get_size(&m->user_md);
        unpacked = host->alloc(host, bytes ? bytes : 1, ODN_ALIGNMENT);
        if (!unpacked) {
            return host->status_create(host, PLX_OUT_OF_MEMORY,
                                       "cpu_onednn: cannot allocate %zu bytes to rearrange "
                                       "recurrent weights", bytes);
        }
        odn_rnn_unpack(&m->unpack, data, unpacked);
        data = unpacked;
    }
    dnnl_engine_t eng = w->backend->engine;
    dnnl_memory_t src_mem = NULL, dst_mem = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    const char *call = "dnnl_memory_create";
    dnnl_status_t st = dnnl_memory_create(&src_mem, &m->user_md, eng, (void *)data);
    if (st == dnnl_success) {
        st = dnnl_memory_create(&dst_mem, &m->md, eng, dst);
    }
    if (st == dnnl_success) {
        call = "dnnl_reorder_primitive_desc_create";
        st = dnnl_reorder_primitive_desc_create(&rpd, &m->user_md, eng, &m->md, eng, NULL);
    }
    if (st == dnnl_success) {
        call = "dnnl_primitive_create (reorder)";
        st = dnnl_primitive_create(&reorder, rpd);
    }
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, src_mem}, {DNNL_ARG_TO, dst_mem}};
        call = "dnnl_primitive_execute (weights reorder)";
        int prev = odn_threads_enter(w->backend);
        st = dnnl_primitive_execute(reorder, w->stream, 2, args);
        if (st == dnnl_success) {
            call = "dnnl_stream_wait";
            st = dnnl_stream_wait(w->stream);
        }
        odn_threads_leave(w->backend, prev);
    }
    if (reorder) {
        dnnl_primitive_destroy(reorder);
    }
    if (rpd) {
        dnnl_primitive_desc_destroy(rpd);
    }
    if (dst_mem) {
        dnnl_memory_destroy(dst_mem);
    }
    if (src_mem) {
        dnnl_memory_destroy(src_mem);
    }
    host->free(host, unpacked);
    return st == dnnl_success ? NULL : odn_status(host, PLX_INTERNAL, call, st);
}

/* The weights of plan memory `m` (constant `data` read as m->user_md,
 * ODN_BIND_PACKED) packed into m->md, from the factory's list or packed now
 * and added to it; the caller holds one use. The key is all four (with
 * the rearrangement m->unpack): one constant may feed two layers that
 * read it differently (transposed or not) into the same layout. */
static plx_status acquire_packed(plx_workload *w, const odn_mem *m, const void *data,
                                 odn_packed **out) {
    plx_factory *f = w->factory;
    const plx_host *host = w->host;
    plx_status s = NULL;
    pthread_mutex_lock(&f->lock);
    odn_packed *p = f->packed;
    while (p && !(p->data == data && dnnl_memory_desc_equal(&p->user_md, &m->user_md) &&
                  dnnl_memory_desc_equal(&p->md, &m->md) &&
                  memcmp(&p->unpack, &m->unpack, sizeof p->unpack) == 0)) {
        p = p->next;
    }
    if (!p) {
        size_t size = dnnl_memory_desc_get_size(&m->md);
        p = host->alloc(host, sizeof *p, 0);
        void *buffer = p ? host->alloc(host, size ? size : 1, ODN_ALIGNMENT) : NULL;
        if (!buffer) {
            host->free(host, p);
            p = NULL;
            s = host->status_create(host, PLX_OUT_OF_MEMORY,
                                    "cpu_onednn: cannot allocate %zu bytes for packed weights",
                                    size);
        } else if ((s = pack_constant(w, m, data, buffer))) {
            host->free(host, buffer);
            host->free(host, p);
            p = NULL;
        } else {
            *p = (odn_packed){f->packed, data, m->user_md, m->md, m->unpack, buffer, 0};
            f->packed = p;
            host->log(host, PLX_LOG_DEBUG, "cpu_onednn: packed %zu bytes of weights", size);
        }
    }
    if (p) {
        p->refs++;
    }
    pthread_mutex_unlock(&f->lock);
    *out = p;
    return s;
}

#define WL_CHECK(call)                                                                    \
    do {                                                                                  \
        dnnl_status_t wl_st_ = (call);                                                    \
        if (wl_st_ != dnnl_success) {                                                     \
            plx_status wl_s_ = odn_status(host, wl_st_ == dnnl_out_of_memory              \
                                                    ? PLX_OUT_OF_MEMORY : PLX_INTERNAL,   \
                                          #call, wl_st_);                                 \
            odn_destroy_workload(w);                                                      \
            return wl_s_;                                                                 \
        }                                                                                 \
    } while (0)

static void *zeroed(const plx_host *host, size_t bytes) {
    void *p = host->alloc(host, bytes, 0);
    if (p) {
        memset(p, 0, bytes);
    }
    return p;
}

static plx_status create_workload(plx_factory *factory, const plx_layer_view *layer,
                                  plx_tensor_handle *const *inputs,
                                  plx_tensor_handle *const *outputs, plx_workload **out_workload) {
    const plx_host *host = factory->tensors.host;
    plx_workload *w = host->alloc(host, sizeof *w, 0);
    if (!w) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
    }
    memset(w, 0, sizeof *w);
    w->host = host;
    w->backend = factory->backend;
    w->factory = factory;
    w->input_count = layer->input_count;
    w->output_count = layer->output_count;
    w->inputs = host->alloc(host, (layer->input_count + 1) * sizeof *w->inputs, 0);
    w->outputs = host->alloc(host, (layer->output_count + 1) * sizeof *w->outputs, 0);
    if (!w->inputs || !w->outputs) {
        odn_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
    }
    for (unsigned i = 0; i < layer->input_count; i++) {
        w->inputs[i] = inputs[i];
    }
    for (unsigned i = 0; i < layer->output_count; i++) {
        w->outputs[i] = outputs[i];
    }
    if (layer->op == PLX_OP_CONSTANT) {
        const plx_constant_desc *d = layer->desc;
        w->constant_data = d->data; /* valid while the network lives (R-18 (2)) */
        w->constant_bytes = plx_host_tensor_of(outputs[0])->bytes;
        *out_workload = w;
        return NULL;
    }
    odn_context ctx = odn_context_of(w->backend, host);
    plx_status s = odn_graph_plan(&ctx, layer, &w->plan);
    if (s) {
        odn_destroy_workload(w);
        return s;
    }
    WL_CHECK(dnnl_stream_create(&w->stream, w->backend->engine, dnnl_stream_default_flags));
    unsigned nm = w->plan.mem_count, ns = w->plan.step_count;
    /* Zeroed as soon as allocated: odn_destroy_workload walks them. */
    w->mems = zeroed(host, (nm + 1) * sizeof *w->mems);
    w->packed = zeroed(host, (nm + 1) * sizeof *w->packed);
    w->steps = zeroed(host, (ns + 1) * sizeof *w->steps);
    size_t *offsets = host->alloc(host, (nm + 1) * sizeof *offsets, 0);
    if (!w->mems || !w->packed || !w->steps || !offsets) {
        host->free(host, offsets);
        odn_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cpu_onednn: out of memory");
    }
    w->arena_bytes = layout_arena(host, &w->plan, offsets);
    if (w->arena_bytes == SIZE_MAX ||
        (w->arena_bytes && !(w->arena = host->alloc(host, w->arena_bytes, ODN_ALIGNMENT)))) {
        size_t bytes = w->arena_bytes;
        host->free(host, offsets);
        odn_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cpu_onednn: cannot allocate %zu bytes for the activations "
                                   "between layers", bytes == SIZE_MAX ? (size_t)0 : bytes);
    }
    for (unsigned i = 0; i < nm; i++) {
        const odn_mem *m = &w->plan.mems[i];
        void *handle = DNNL_MEMORY_NONE;
        if (m->binding == ODN_BIND_PACKED) {
            const void *data = layer->input_constants[m->slot];
            if (m->unpack.kind == ODN_UNPACK_NONE &&
                dnnl_memory_desc_equal(&m->md, &m->user_md)) {
                handle = (void *)data; /* the chosen layout is the plain one: read in place */
            } else if ((s = acquire_packed(w, m, data, &w->packed[i]))) {
                host->free(host, offsets);
                odn_destroy_workload(w);
                return s;
            } else {
                handle = w->packed[i]->buffer;
            }
        } else if (m->binding == ODN_BIND_INTERNAL) {
            handle = (char *)w->arena + offsets[i];
        } else if (m->binding == ODN_BIND_ALIAS) {
            handle = (char *)w->arena + offsets[m->slot];
        }
        dnnl_status_t st = dnnl_memory_create(&w->mems[i], &m->md, w->backend->engine, handle);
        if (st != dnnl_success) {
            host->free(host, offsets);
        }
        WL_CHECK(st);
    }
    host->free(host, offsets);
    /* One scratchpad, the largest any step asks for (user mode). */
    size_t scratch = 0;
    for (unsigned k = 0; k < ns; k++) {
        const dnnl_memory_desc_t *smd =
            dnnl_primitive_desc_query_md(w->plan.steps[k].pd, dnnl_query_scratchpad_md, 0);
        size_t sz = smd ? dnnl_memory_desc_get_size(smd) : 0;
        scratch = sz > scratch ? sz : scratch;
    }
    if (scratch) {
        w->scratch = host->alloc(host, scratch, ODN_ALIGNMENT);
        if (!w->scratch) {
            odn_destroy_workload(w);
            return host->status_create(host, PLX_OUT_OF_MEMORY,
                                       "cpu_onednn: cannot allocate a %zu-byte scratchpad",
                                       scratch);
        }
    }
    for (unsigned k = 0; k < ns; k++) {
        const odn_step *st = &w->plan.steps[k];
        wl_step *ws = &w->steps[k];
        WL_CHECK(dnnl_primitive_create(&ws->prim, st->pd));
        int n = 0;
        for (unsigned a = 0; a < st->arg_count; a++) {
            ws->args[n].arg = st->args[a].arg;
            ws->args[n].memory = w->mems[st->args[a].mem];
            n++;
        }
        const dnnl_memory_desc_t *smd =
            dnnl_primitive_desc_query_md(st->pd, dnnl_query_scratchpad_md, 0);
        if (smd && dnnl_memory_desc_get_size(smd) > 0) {
            WL_CHECK(dnnl_memory_create(&ws->scratch_mem, smd, w->backend->engine, w->scratch));
            ws->args[n].arg = DNNL_ARG_SCRATCHPAD;
            ws->args[n].memory = ws->scratch_mem;
            n++;
        }
        ws->arg_count = n;
    }
    unsigned reorders = 0;
    for (unsigned k = 0; k < ns; k++) {
        dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
        dnnl_primitive_desc_query(w->plan.steps[k].pd, dnnl_query_primitive_kind, 0, &kind);
        reorders += kind == dnnl_reorder;
    }
    host->log(host, PLX_LOG_DEBUG, "cpu_onednn: layer '%s': %u primitives (%u reorders), "
              "%zu bytes of activations between them, %zu of scratchpad", layer->name, ns,
              reorders, w->arena_bytes, scratch);
    *out_workload = w;
    return NULL;
}

static plx_status odn_execute_workload(plx_workload *w) {
    const plx_host *host = w->host;
    if (w->constant_data || w->plan.step_count == 0) {
        void *dst = w->output_count ? handle_data(w->outputs[0]) : NULL;
        if (!dst && w->constant_bytes) {
            return host->status_create(host, PLX_FAILED_PRECONDITION,
                                       "cpu_onednn: the constant's output has no memory");
        }
        if (w->constant_bytes) {
            memcpy(dst, w->constant_data, w->constant_bytes);
        }
        return NULL;
    }
    /* Bind the handles' memory as it is now (imports move it). */
    for (unsigned i = 0; i < w->plan.mem_count; i++) {
        const odn_mem *m = &w->plan.mems[i];
        plx_tensor_handle *h;
        if (m->binding == ODN_BIND_INPUT && m->slot < w->input_count) {
            h = w->inputs[m->slot];
        } else if (m->binding == ODN_BIND_OUTPUT && m->slot < w->output_count) {
            h = w->outputs[m->slot];
        } else {
            continue;
        }
        void *data = handle_data(h);
        if (!data) {
            return host->status_create(host, PLX_FAILED_PRECONDITION,
                                       "cpu_onednn: %s %u has no memory",
                                       m->binding == ODN_BIND_INPUT ? "input" : "output",
                                       m->slot);
        }
        dnnl_status_t st = dnnl_memory_set_data_handle(w->mems[i], data);
        if (st != dnnl_success) {
            return odn_status(host, PLX_INTERNAL, "dnnl_memory_set_data_handle", st);
        }
    }
    int prev = odn_threads_enter(w->backend);
    dnnl_status_t st = dnnl_success;
    const char *call = "dnnl_primitive_execute";
    for (unsigned k = 0; k < w->plan.step_count && st == dnnl_success; k++) {
        wl_step *ws = &w->steps[k];
        st = dnnl_primitive_execute(ws->prim, w->stream, ws->arg_count, ws->args);
    }
    if (st == dnnl_success) {
        call = "dnnl_stream_wait";
        st = dnnl_stream_wait(w->stream);
    }
    odn_threads_leave(w->backend, prev);
    return st == dnnl_success ? NULL : odn_status(host, PLX_INTERNAL, call, st);
}

/* oneDNN sizes a primitive's threading (its scratchpad, its work split)
 * from the calling thread's OpenMP thread count when the primitive is
 * created, so creation runs under the backend's `threads` too, as every
 * execution does. */
static plx_status odn_create_workload(plx_factory *factory, const plx_layer_view *layer,
                                      plx_tensor_handle *const *inputs,
                                      plx_tensor_handle *const *outputs,
                                      plx_workload **out_workload) {
    int prev = odn_threads_enter(factory->backend);
    plx_status s = create_workload(factory, layer, inputs, outputs, out_workload);
    odn_threads_leave(factory->backend, prev);
    return s;
}

/* ---- graph optimisation (R-23) ------------------------------------------ */

/* With `graph` on (the default), each convex run of the subgraph becomes
 * one layer (odn_graph_substitute): activations stay in oneDNN's blocked
 * layouts between its primitives. Otherwise, or for the layers left out,
 * each convolution, deconvolution, inner product or matmul whose output
 * only an activation reads becomes one precompiled layer: the activation
 * runs as eltwise post-ops of the product's primitive, on each block of
 * the result as it is computed, with no intermediate tensor and no separate
 * pass. The host then asks check_layer, which plans it; a combination
 * oneDNN refuses is rejected there, and the layers stay. */
static plx_status odn_optimize_subgraph(plx_backend *backend, const plx_subgraph_view *g,
                                        const plx_subgraph_editor *editor) {
    odn_context ctx = odn_context_of(backend, backend->host);
    bool *used = NULL;
    if (backend->graph && g->layer_count >= 2) {
        used = backend->host->alloc(backend->host, g->layer_count * sizeof *used, 0);
        if (!used) {
            return backend->host->status_create(backend->host, PLX_OUT_OF_MEMORY,
                                                "cpu_onednn: cannot allocate %u flags",
                                                g->layer_count);
        }
        memset(used, 0, g->layer_count * sizeof *used);
        int prev = odn_threads_enter(backend);
        uint32_t replaced = odn_graph_substitute(&ctx, g, editor, used);
        odn_threads_leave(backend, prev);
        if (replaced == g->layer_count) {
            backend->host->free(backend->host, used);
            return NULL;
        }
    }
    for (uint32_t a = 0; a < g->layer_count; a++) {
        uint32_t r = odn_fusable_activation(g, a);
        if (r == UINT32_MAX || (used && (used[a] || used[r]))) {
            continue;
        }
        const plx_subgraph_layer *base = &g->layers[a];
        odn_fused f;
        odn_fused_init(&f, g, a, r);
        const char *act = plx_activation_func_name(f.activation.func);
        char kind[64];
        snprintf(kind, sizeof kind, "%s+%s", plx_op_name(f.op), act ? act : "activation");
        uint32_t set[2] = {a, r};
        plx_subgraph_source out = {r, 0};
        plx_substitution sub = {(uint32_t)sizeof sub, set, 2, base->inputs,
                                base->view.input_count, &out, 1, kind, &f, sizeof f};
        plx_status s = editor->substitute(editor, &sub);
        if (s) {
            backend->host->status_free(backend->host, s); /* this one stays unfused */
        }
    }
    backend->host->free(backend->host, used);
    return NULL;
}

static const plx_backend_functions odn_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, optimize_subgraph),
    .check_available = odn_check_available,
    .create = odn_create,
    .destroy = odn_destroy,
    .get_capabilities = odn_get_capabilities,
    .check_layer = odn_check_layer,
    .create_factory = odn_create_factory,
    .destroy_factory = odn_destroy_factory,
    .factory_workloads_created = NULL,
    .create_tensor_handle = plx_host_tensor_create_handle,
    .destroy_tensor_handle = plx_host_tensor_destroy_handle,
    .allocate_tensor_handle = plx_host_tensor_allocate_handle,
    .release_tensor_handle = plx_host_tensor_release_handle,
    .map_tensor_handle = plx_host_tensor_map_handle,
    .unmap_tensor_handle = plx_host_tensor_unmap_handle,
    .import_tensor_handle = odn_import_tensor_handle,
    .unimport_tensor_handle = plx_host_tensor_unimport_handle,
    .create_workload = odn_create_workload,
    .destroy_workload = odn_destroy_workload,
    .configure_workload = NULL, /* everything is prepared at creation */
    .execute_workload = odn_execute_workload,
    .create_sub_tensor_handle = plx_host_tensor_create_sub_handle,
    .get_memory_strategy = NULL,
    .optimize_subgraph = odn_optimize_subgraph,
};

static const plx_backend_descriptor odn_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .id = "cpu_onednn",
    .name = "CPU backend on oneDNN",
    .version = "0.1.0",
    .functions = &odn_functions,
    .options = odn_options,
    .option_count = sizeof odn_options / sizeof odn_options[0],
};

/* the only exported symbol; claims the SDK's minor version, so a
 * host older than that refuses it with a clear reason. Keeps nothing. */
PLX_BACKEND_EXPORT const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version,
                                                                   const plx_host *host) {
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR,
                  "cpu_onednn implements backend ABI %d.x; the host implements %u.%u",
                  PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_GET_MAJOR(host_abi_version),
                  PLX_ABI_VERSION_GET_MINOR(host_abi_version));
        return NULL;
    }
    return &odn_descriptor;
}
