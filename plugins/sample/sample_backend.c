/* The sample backend: a small, complete Plexus backend plug-in that runs
 * layers.
 *
 * Copy this file to start a backend of your own (plugins/sample/README.md).
 * It follows the backend ABI 1.4 (docs/backend-abi.md) and shows every part
 * of it a CPU backend needs:
 *
 *   - one exported symbol, plx_backend_entry, that checks the host's ABI
 *     version and returns a static descriptor;
 *   - a static function table: create, destroy, get_capabilities, and the
 *     network group, with a struct_size that covers all
 *     of it;
 *   - one declared option, `greeting`, validated in create, reported
 *     as the vendor capability `sample.greeting`;
 *   - three float32 operators: relu (PLX_OP_ACTIVATION), add (PLX_OP_BINARY,
 *     numpy broadcasting) and gemm (PLX_OP_GEMM, with alpha, beta, the
 *     transposes and a broadcast C), and float32 constants (the weights
 *     that feed them); check_layer refuses everything else with the reason,
 *     and the host runs those layers on another backend;
 *   - tensor handles from the SDK's plexus/host_tensor.h: plain host
 *     memory, malloc and dma-buf import, sub-tensors;
 *   - async_execution and externally_managed_memory, which it
 *     can report because a workload keeps nothing but its own plan, looks
 *     its memory up at every execution and writes its output only during
 *     execute_workload, and the factory shares nothing mutable;
 *   - memory from host->alloc, errors from host->status_create, the host
 *     table kept in the instance and never in a global (R-12..R-14).
 *
 * Includes only the SDK headers and standard headers, and links nothing
 * from libplexus: build it with -fvisibility=hidden and
 * -Wl,-z,defs. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <plexus/backend.h>
#include <plexus/geometry.h>
#include <plexus/host_tensor.h>

#define SAMPLE_ID "sample"
#define SAMPLE_GREETING_KEY "greeting"
#define SAMPLE_GREETING_DEFAULT "hello"
/* Owned tensor memory is aligned for vector loads. */
#define SAMPLE_ALIGNMENT 64

/* What the instance reports: what it can do, never a false entry
 * . create appends sample.greeting. */
static const plx_capability sample_standard_capabilities[] = {
    {.key = PLX_CAP_ASYNC_EXECUTION, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_EXTERNALLY_MANAGED_MEMORY, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_PREIMPORT_IO_TENSORS, .type = PLX_VALUE_BOOL, .bool_value = true},
    PLX_HOST_TENSOR_CAPABILITIES, /* what its handles import and export */
};
#define SAMPLE_STANDARD_CAPS \
    (sizeof sample_standard_capabilities / sizeof sample_standard_capabilities[0])

/* One created instance. Allocated with host->alloc in create and released
 * with host->free of the same table in destroy. Owned by the host
 * between the two calls; the backend never shares it with other runtimes. */
struct plx_backend {
    /* The host table given to create: valid until destroy returns, and the
     * only way back to the host (destroy and get_capabilities receive no
     * table of their own). Never stored in a global. */
    const plx_host *host;
    /* The value of the `greeting` option: a copy owned by the instance,
     * since the option strings die when create returns. */
    char *greeting;
    /* What get_capabilities hands out: valid and unchanged until destroy. */
    plx_capability capabilities[SAMPLE_STANDARD_CAPS + 1];
};

/* ---- the instance -------------------------------------------------------- */

/* Says whether the backend can work on this machine.
 *
 * The sample needs nothing but the CPU, so it is always available and
 * returns NULL. A real backend checks here, cheaply and without keeping
 * anything, what it needs at run time: that its device node exists and
 * can be opened, that the vendor driver library can be dlopen()ed and
 * reports at least one device, that the driver or firmware version is one
 * it supports. When something is missing it returns
 *     host->status_create(host, PLX_UNAVAILABLE, "no device: /dev/foo0 does not exist");
 * and the host lists the backend as unavailable with that message instead
 * of rejecting it. Finding no device is the normal case on most
 * machines: it must never crash, abort or print to stdout.
 *
 * Ownership: a returned status belongs to the host. `host` is valid only
 * during the call; do not keep it.
 * Threads: called at most once per runtime, before create, on the thread
 * that creates the runtime. */
static plx_status sample_check_available(const plx_host *host) {
    (void)host;
    return NULL;
}

/* Copies `text` into memory from host->alloc; NULL when out of memory. */
static char *sample_strdup(const plx_host *host, const char *text) {
    size_t size = strlen(text) + 1;
    char *copy = host->alloc(host, size, 0);
    if (copy) {
        memcpy(copy, text, size);
    }
    return copy;
}

/* Creates an instance.
 *
 * `options` holds only keys the descriptor declares, each at most once
 * (the host has refused any other key, and a key given twice, R-9); the
 * values are unchecked, so validating them is this function's job. An
 * option not given takes the default written in the descriptor: the host
 * does not fill it in.
 *
 * On success writes *out_backend and returns NULL. On failure returns a
 * status, owned by the host from then on, leaves *out_backend NULL and
 * holds nothing.
 *
 * Ownership: `options` and its strings are the host's and valid only
 * during this call, hence the copy of the greeting. `host` stays valid
 * until destroy, so the instance keeps it.
 * Threads: called once per runtime, on the thread that creates the
 * runtime. */
static plx_status sample_create(const plx_host *host, const plx_option *options,
                                size_t option_count, plx_backend **out_backend) {
    *out_backend = NULL;

    const char *greeting = SAMPLE_GREETING_DEFAULT;
    for (size_t i = 0; i < option_count; i++) {
        if (strcmp(options[i].key, SAMPLE_GREETING_KEY) == 0) {
            greeting = options[i].value;
        }
    }
    if (greeting == NULL || greeting[0] == '\0') {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "invalid value '%s' for option '%s' of backend '%s': "
                                   "expected a non-empty string",
                                   greeting ? greeting : "", SAMPLE_GREETING_KEY, SAMPLE_ID);
    }

    struct plx_backend *backend = host->alloc(host, sizeof *backend, 0);
    if (backend == NULL) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "backend '%s': out of memory creating the instance",
                                   SAMPLE_ID);
    }
    backend->host = host;
    backend->greeting = sample_strdup(host, greeting);
    if (backend->greeting == NULL) {
        host->free(host, backend);
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "backend '%s': out of memory copying option '%s'",
                                   SAMPLE_ID, SAMPLE_GREETING_KEY);
    }

    /* The standard keys, then a vendor key, namespaced with the backend id,
     * which the host lists untouched. Unused members are zeroed. */
    memcpy(backend->capabilities, sample_standard_capabilities,
           sizeof sample_standard_capabilities);
    plx_capability *greeting_cap = &backend->capabilities[SAMPLE_STANDARD_CAPS];
    memset(greeting_cap, 0, sizeof *greeting_cap);
    greeting_cap->key = SAMPLE_ID "." SAMPLE_GREETING_KEY;
    greeting_cap->type = PLX_VALUE_STRING;
    greeting_cap->string_value = backend->greeting;

    *out_backend = backend;
    return NULL;
}

/* Releases an instance and everything it holds, with the allocator it came
 * from.
 *
 * Ownership: `backend` is invalid after the call, and so are the
 * capabilities it handed out.
 * Threads: called once, on the thread that destroys the runtime, after
 * every other call on the instance has returned (every network on it was
 * unloaded, so no factory is left). */
static void sample_destroy(plx_backend *backend) {
    if (backend == NULL) {
        return;
    }
    const plx_host *host = backend->host;
    host->free(host, backend->greeting);
    host->free(host, backend);
}

/* Reports the instance's capabilities.
 *
 * Ownership: the array and its strings belong to the instance and stay
 * valid and unchanged until destroy; the host copies them once, right
 * after create.
 * Threads: called on the thread that creates the runtime. */
static plx_status sample_get_capabilities(plx_backend *backend,
                                          const plx_capability **out_capabilities,
                                          size_t *out_count) {
    *out_capabilities = backend->capabilities;
    *out_count = sizeof backend->capabilities / sizeof backend->capabilities[0];
    return NULL;
}

/* ---- which layers it runs (R-18 (1), R-19) ------------------------------- */

/* The kernels of the sample, one per kind of layer it accepts. */
typedef enum sample_kernel {
    SAMPLE_CONSTANT,
    SAMPLE_RELU,
    SAMPLE_ADD,
    SAMPLE_GEMM
} sample_kernel;

/* What a workload needs to run its layer, worked out from the layer view
 * alone; nothing in it points into the view except `constant`. */
typedef struct sample_plan {
    sample_kernel kernel;
    size_t count; /* elements of the output */
    /* constant: its data, valid until the factory is destroyed (R-18 (2)) */
    const void *constant;
    /* add: the output's dims, and the element strides with which A and B
     * are read as the output's shape (0 along dims they broadcast over) */
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK];
    int64_t a_strides[PLX_MAX_RANK];
    int64_t b_strides[PLX_MAX_RANK];
    /* gemm: M, N, K and the operands' strides; alpha and beta */
    plx_gemm_geom gemm;
    float alpha, beta;
} sample_plan;

/* Plans `layer` into *plan; returns NULL, or the reason the sample cannot
 * run it. The host has validated the view ("What the host guarantees
 * about a layer view" in docs/backend-abi.md: known op, slot counts,
 * descriptor sizes, infos, and the operator's own shape rules), so what is
 * checked here is what the sample supports, and the shapes its kernels
 * rely on, so that they never read or write out of bounds whatever the
 * infos say (R-19 (2)). A reason says what the backend cannot do and
 * never names the backend: the host adds the layer, its op and the
 * backend id (R-18 (1)). */
static const char *sample_plan_layer(const plx_layer_view *layer, sample_plan *plan) {
    memset(plan, 0, sizeof *plan);
    switch (layer->op) {
    case PLX_OP_CONSTANT: plan->kernel = SAMPLE_CONSTANT; break;
    case PLX_OP_ACTIVATION:
        if (((const plx_activation_desc *)layer->desc)->func != PLX_ACT_RELU) {
            return "runs activation relu only";
        }
        plan->kernel = SAMPLE_RELU;
        break;
    case PLX_OP_BINARY:
        if (((const plx_binary_desc *)layer->desc)->func != PLX_BINARY_ADD) {
            return "runs binary add only";
        }
        plan->kernel = SAMPLE_ADD;
        break;
    case PLX_OP_GEMM: plan->kernel = SAMPLE_GEMM; break;
    default: return "no kernel for this operator (relu, add, gemm and constants only)";
    }
    /* A dtype of a later minor is refused here too (R-19 (3)): only
     * float32 passes. */
    for (uint32_t i = 0; i < layer->input_count; i++) {
        if (layer->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            return "runs float32 only";
        }
    }
    const plx_tensor_info *y = &layer->outputs[0];
    if (y->dtype != PLX_DTYPE_FLOAT32) {
        return "runs float32 only";
    }
    plx_tensor_info_element_count(y, &plan->count); /* fits: R-19 (2) */
    switch (plan->kernel) {
    case SAMPLE_CONSTANT: plan->constant = ((const plx_constant_desc *)layer->desc)->data; break;
    case SAMPLE_RELU:
        if (!plx_tensor_info_same_shape(&layer->inputs[0], y)) {
            return "relu with an output of another shape than its input";
        }
        break;
    case SAMPLE_ADD:
        plan->rank = y->rank;
        memcpy(plan->dims, y->dims, sizeof plan->dims);
        if (!plx_tensor_info_broadcast_strides(&layer->inputs[0], y, plan->a_strides) ||
            !plx_tensor_info_broadcast_strides(&layer->inputs[1], y, plan->b_strides)) {
            return "add whose inputs do not broadcast to its output";
        }
        break;
    case SAMPLE_GEMM: {
        const plx_gemm_desc *d = layer->desc;
        plx_gemm_geom *g = &plan->gemm;
        plx_geom_status st = plx_gemm_geom_of(&layer->inputs[0], &layer->inputs[1],
                                              layer->input_count > 2 ? &layer->inputs[2] : NULL,
                                              d->trans_a, d->trans_b, g);
        if (st != PLX_GEOM_OK) {
            return plx_geom_status_text(st);
        }
        if (y->rank != 2 || y->dims[0] != g->m || y->dims[1] != g->n) {
            return "gemm whose output is not [M, N]";
        }
        plan->alpha = d->alpha;
        plan->beta = d->beta;
        break;
    }
    }
    return NULL;
}

/* Says whether the backend runs `layer`: NULL, or PLX_UNSUPPORTED with the
 * reason, which users see as it is, after the layer and the backend id
 * (R-18 (1)).
 *
 * Ownership: the view is the host's, valid during the call only; nothing
 * of it is kept (R-18 (2)). The returned status is the host's.
 * Threads: any thread, concurrently, with no factory involved: it reads
 * the view and nothing else. */
static plx_status sample_check_layer(plx_backend *backend, const plx_layer_view *layer) {
    sample_plan plan;
    const char *reason = sample_plan_layer(layer, &plan);
    return reason ? backend->host->status_create(backend->host, PLX_UNSUPPORTED, "%s", reason)
                  : NULL;
}

/* ---- factories and tensor handles (R-16, R-17) ---------------------------- */

/* One loaded network's factory. Its tensor handles are the SDK's host
 * tensors (plexus/host_tensor.h, PLX_HOST_TENSOR_FUNCTIONS in the table
 * below), which need the plx_host_tensor_factory at its start. It holds
 * nothing mutable, so workloads and handles of different working memories
 * may be used at once. */
struct plx_factory {
    plx_host_tensor_factory tensors;
};

/* Creates the factory of one loaded network (R-16 (4)).
 *
 * Ownership: the factory is the backend's, from host->alloc, until
 * destroy_factory; `params` is the host's, valid during the call (the
 * sample needs none of it: its handles import every source the host
 * passes them).
 * Threads: any thread, possibly beside other networks' calls (R-18 (9)). */
static plx_status sample_create_factory(plx_backend *backend, const plx_factory_params *params,
                                        plx_factory **out_factory) {
    (void)params;
    const plx_host *host = backend->host;
    plx_factory *factory = host->alloc(host, sizeof *factory, 0);
    if (factory == NULL) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory (the factory)");
    }
    plx_host_tensor_factory_init(&factory->tensors, host, SAMPLE_ALIGNMENT);
    *out_factory = factory;
    return NULL;
}

/* Releases a factory. Called once, after every handle and workload it
 * created was destroyed (R-16 (5)). */
static void sample_destroy_factory(plx_factory *factory) {
    factory->tensors.host->free(factory->tensors.host, factory);
}

/* ---- workloads (R-18) ------------------------------------------------------ */

/* One layer bound to its handles. Everything it needs at execution is
 * worked out in create_workload, so executing allocates nothing
 * (R-18 (7)); nothing in it changes after creation. */
struct plx_workload {
    const plx_host *host;
    sample_plan plan;
    /* The bound handles (the host's until it destroys the workload, which
     * it does before them, R-18 (8)); NULL beyond the layer's inputs. */
    plx_tensor_handle *inputs[3];
    plx_tensor_handle *output;
};

/* Creates the workload for `layer`, which check_layer accepted with the
 * same view (R-19 (3)).
 *
 * Ownership: the view is valid during the call only, so the workload keeps
 * its plan, numbers worked out from it; a constant's data is the
 * exception, valid until the factory is destroyed (R-18 (2)). The handles
 * stay the host's. The workload is the backend's until destroy_workload.
 * Threads: for a new working memory, possibly beside executions of
 * others (R-20 (4)); it touches only the new workload. */
static plx_status sample_create_workload(plx_factory *factory, const plx_layer_view *layer,
                                         plx_tensor_handle *const *inputs,
                                         plx_tensor_handle *const *outputs,
                                         plx_workload **out_workload) {
    const plx_host *host = factory->tensors.host;
    sample_plan plan;
    const char *reason = sample_plan_layer(layer, &plan);
    if (reason) { /* never for a view check_layer accepted */
        return host->status_create(host, PLX_UNSUPPORTED, "%s", reason);
    }
    plx_workload *w = host->alloc(host, sizeof *w, 0);
    if (w == NULL) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory (the workload)");
    }
    memset(w, 0, sizeof *w);
    w->host = host;
    w->plan = plan;
    for (uint32_t i = 0; i < layer->input_count; i++) {
        w->inputs[i] = inputs[i];
    }
    w->output = outputs[0];
    *out_workload = w;
    return NULL;
}

/* Releases a workload; called before the handles it is bound to are
 * destroyed (R-18 (8)). */
static void sample_destroy_workload(plx_workload *w) {
    w->host->free(w->host, w);
}

/* Where a bound handle's bytes are now: looked up at every execution,
 * since imported memory (zero-copy inputs and outputs, import layers) may
 * move between executions (R-18 (6)). NULL only for a tensor with no
 * memory, which the host never runs (R-17 (2), (3)). */
static float *sample_data(plx_tensor_handle *handle) {
    return plx_host_tensor_data(plx_host_tensor_of(handle));
}

/* Y = A + B, numpy broadcasting: walks Y in row-major order, moving A's and
 * B's offsets by their strides, which are 0 along broadcast dims. */
static void sample_add(const sample_plan *p, const float *a, const float *b, float *y) {
    int64_t index[PLX_MAX_RANK] = {0};
    int64_t ia = 0, ib = 0;
    for (size_t e = 0; e < p->count; e++) {
        y[e] = a[ia] + b[ib];
        for (uint32_t d = p->rank; d-- > 0;) {
            ia += p->a_strides[d];
            ib += p->b_strides[d];
            if (++index[d] < p->dims[d]) {
                break;
            }
            ia -= p->a_strides[d] * p->dims[d];
            ib -= p->b_strides[d] * p->dims[d];
            index[d] = 0;
        }
    }
}

/* Y [M, N] = alpha * A' B' + beta * C, in float, one dot product per
 * element (a real backend calls its tuned library here). */
static void sample_gemm(const sample_plan *p, const float *a, const float *b, const float *c,
                        float *y) {
    const plx_gemm_geom *g = &p->gemm;
    for (int64_t m = 0; m < g->m; m++) {
        for (int64_t n = 0; n < g->n; n++) {
            float sum = 0.0f;
            for (int64_t k = 0; k < g->k; k++) {
                sum += a[m * g->a_sm + k * g->a_sk] * b[k * g->b_sk + n * g->b_sn];
            }
            float bias = c ? p->beta * c[m * g->c_sm + n * g->c_sn] : 0.0f;
            y[m * g->n + n] = p->alpha * sum + bias;
        }
    }
}

/* Runs the layer, synchronously: its output is written when this returns
 * (R-18 (7)). Allocates nothing, keeps nothing in its handles' memory
 * between executions and writes its output only here (R-21 (6)).
 *
 * Ownership: a returned status is the host's, which prefixes the layer.
 * Threads: never concurrently with another call on this workload's
 * working memory; workloads of other working memories run at the same
 * time (R-20 (4)), which is safe since each reads only itself and its own
 * handles. */
static plx_status sample_execute_workload(plx_workload *w) {
    const sample_plan *p = &w->plan;
    const float *in[3] = {NULL, NULL, NULL};
    bool missing = false;
    for (int i = 0; i < 3 && w->inputs[i]; i++) {
        in[i] = sample_data(w->inputs[i]);
        missing |= in[i] == NULL;
    }
    float *y = sample_data(w->output);
    if (p->count > 0 && (y == NULL || missing)) {
        return w->host->status_create(w->host, PLX_FAILED_PRECONDITION,
                                      "a tensor of the layer has no memory");
    }
    switch (p->kernel) {
    case SAMPLE_CONSTANT: memcpy(y, p->constant, p->count * sizeof *y); break;
    case SAMPLE_RELU:
        for (size_t e = 0; e < p->count; e++) {
            y[e] = in[0][e] > 0.0f ? in[0][e] : 0.0f;
        }
        break;
    case SAMPLE_ADD: sample_add(p, in[0], in[1], y); break;
    case SAMPLE_GEMM: sample_gemm(p, in[0], in[1], in[2], y); break;
    }
    return NULL;
}

/* ---- the table and the descriptor ------------------------------------------ */

/* Static const, so they need no release and stay valid while the plug-in
 * is loaded.
 *
 * struct_size is sizeof: the whole table of the SDK this file is built
 * with, every entry not set here NULL, which the host reads as absent
 * . Never cut it short with PLX_STRUCT_SIZE_UPTO(plx_backend_functions,
 * get_capabilities): the host would not see check_layer and the rest, and
 * the backend would load and run nothing (R-16 (3)). */
static const plx_backend_functions sample_functions = {
    .struct_size = (uint32_t)sizeof(plx_backend_functions),
    .check_available = sample_check_available,
    .create = sample_create,
    .destroy = sample_destroy,
    .get_capabilities = sample_get_capabilities,
    .check_layer = sample_check_layer,
    .create_factory = sample_create_factory,
    .destroy_factory = sample_destroy_factory,
    /* create, destroy, allocate, release, map, unmap, import and unimport
     * of tensor handles, and create_sub_tensor_handle: plain host memory
     * (plexus/host_tensor.h). */
    PLX_HOST_TENSOR_FUNCTIONS,
    .create_workload = sample_create_workload,
    .destroy_workload = sample_destroy_workload,
    .execute_workload = sample_execute_workload,
};

static const plx_option_info sample_options[] = {
    {
        .key = SAMPLE_GREETING_KEY,
        .description = "text reported as the sample.greeting capability; any non-empty string",
        .default_value = SAMPLE_GREETING_DEFAULT,
    },
};

static const plx_backend_descriptor sample_descriptor = {
    .struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = SAMPLE_ID,
    .name = "Sample backend",
    .version = "1.1.0",
    .functions = &sample_functions,
    .options = sample_options,
    .option_count = sizeof sample_options / sizeof sample_options[0],
};

/* The one exported symbol: says which ABI this plug-in speaks.
 *
 * The sample is built for PLX_ABI_VERSION_MAJOR.PLX_ABI_VERSION_MINOR and
 * serves any host with the same major and a minor at least as high.
 * For any other host it logs why at error level, which the host quotes in
 * the rejection, and returns NULL. A backend that can also serve
 * older minors would return a descriptor for the host's minor here instead.
 *
 * Reads only host fields that exist in every 1.x host.
 *
 * Ownership: the descriptor is static; nothing is allocated, because
 * there is no matching unload call. `host` is valid only during the call;
 * do not keep it.
 * Threads: may run concurrently for different runtimes; it touches no
 * mutable state. */
const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    if (host == NULL) {
        return NULL;
    }
    unsigned host_major = PLX_ABI_VERSION_GET_MAJOR(host_abi_version);
    unsigned host_minor = PLX_ABI_VERSION_GET_MINOR(host_abi_version);
    if (host_major != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR,
                  "backend '%s' is built for ABI %u.%u, this host implements %u.%u: "
                  "major versions must match",
                  SAMPLE_ID, (unsigned)PLX_ABI_VERSION_MAJOR, (unsigned)PLX_ABI_VERSION_MINOR,
                  host_major, host_minor);
        return NULL;
    }
    /* Majors are equal, so this compares the minors (written this way
     * because "host_minor < 0" would be a constant when the minor is 0). */
    if (host_abi_version < PLX_ABI_VERSION) {
        host->log(host, PLX_LOG_ERROR,
                  "backend '%s' is built for ABI %u.%u, this host implements %u.%u: "
                  "the backend needs a newer host",
                  SAMPLE_ID, (unsigned)PLX_ABI_VERSION_MAJOR, (unsigned)PLX_ABI_VERSION_MINOR,
                  host_major, host_minor);
        return NULL;
    }
    return &sample_descriptor;
}
