/* cpu_ref: the CPU backend, as a plug-in built with the SDK alone.
 *
 * The entry point, descriptor and capabilities, and the ABI 1.1 objects:
 * factories, tensor handles in host memory (the SDK's plexus/host_tensor.h,
 * which imports caller malloc memory and dma-bufs and lends its memory to
 * other backends), and workloads that run the kernels of kernels.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/backend.h>
#include <plexus/host_tensor.h>

#include "gemm.h"
#include "fusion.h"
#include "kernels.h"
#include "threadpool.h"

#define CPU_REF_ID "cpu_ref"

/* The standard capabilities, then cpu_ref.threads and cpu_ref.isa. */
#define CPU_REF_STANDARD_CAPS 6
#define CPU_REF_CAPS (CPU_REF_STANDARD_CAPS + 2)

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
    plxk_compute compute; /* the GEMM variant and the intra-op pool, for kernels */
    bool fusion;          /* option fusion: optimize_subgraph fuses activations */
    plx_capability caps[CPU_REF_CAPS];
};

static const plx_capability cpu_ref_capabilities[CPU_REF_STANDARD_CAPS] = {
    {.key = PLX_CAP_ASYNC_EXECUTION, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_EXTERNALLY_MANAGED_MEMORY, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_PREIMPORT_IO_TENSORS, .type = PLX_VALUE_BOOL, .bool_value = true},
    PLX_HOST_TENSOR_CAPABILITIES, /* its handles' (plexus/host_tensor.h) */
};

/* ---- options (R-9) -------------------------------------------------------- */

static const plx_option_info cpu_ref_options[] = {
    {"threads", "intra-op threads per backend instance, 1 to 256 (1: no worker threads); "
                "unset: the number of online CPUs", NULL},
    {"isa", "GEMM kernel variant: auto, avx512, avx2 or portable (one the CPU cannot run is "
            "refused)", "auto"},
    {"fusion", "on: a conv, fully_connected, gemm or matmul read only by an activation runs "
               "as one precompiled layer; off: every layer as built", "on"},
};
#define CPU_REF_OPTION_COUNT (sizeof cpu_ref_options / sizeof cpu_ref_options[0])

static plx_status bad_option(const plx_host *host, const char *key, const char *value,
                             const char *expected) {
    return host->status_create(host, PLX_INVALID_ARGUMENT,
                               "invalid value '%s' for option '%s' of backend '" CPU_REF_ID
                               "': expected %s", value, key, expected);
}

/* Reads the options into *threads, *isa and *fusion (the defaults when not
 * given). */
static plx_status parse_options(const plx_host *host, const plx_option *options, size_t count,
                                size_t *threads, plxk_isa *isa, bool *fusion) {
    *threads = plxk_pool_default_threads();
    *isa = plxk_isa_best();
    *fusion = true;
    for (size_t i = 0; i < count; i++) {
        const char *k = options[i].key, *v = options[i].value ? options[i].value : "";
        if (strcmp(k, "fusion") == 0) {
            if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
                return bad_option(host, k, v, "on or off");
            }
            *fusion = strcmp(v, "on") == 0;
        } else if (strcmp(k, "threads") == 0) {
            char *end;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (!*v || *end || errno || n < 1 || n > PLXK_POOL_MAX_THREADS) {
                return bad_option(host, k, v, "an integer from 1 to 256");
            }
            *threads = (size_t)n;
        } else if (strcmp(k, "isa") == 0) {
            if (!plxk_isa_parse(v, isa)) {
                return bad_option(host, k, v, "auto, avx512, avx2 or portable");
            }
            if (!plxk_isa_supported(*isa)) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "invalid value '%s' for option '%s' of backend '"
                                           CPU_REF_ID "': this CPU or build cannot run it "
                                           "(auto picks %s here)",
                                           v, k, plxk_isa_name(plxk_isa_best()));
            }
        }
        /* The host passes declared keys only (R-9 (3)). */
    }
    return NULL;
}

static plx_status cpu_ref_create(const plx_host *host, const plx_option *options,
                                 size_t option_count, plx_backend **out_backend) {
    size_t threads;
    plxk_isa isa;
    bool fusion;
    plx_status s = parse_options(host, options, option_count, &threads, &isa, &fusion);
    if (s) {
        return s;
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cpu_ref: out of memory (the backend instance)");
    }
    memset(b, 0, sizeof *b);
    b->host = host;
    b->compute.isa = isa;
    b->fusion = fusion;
    char err[256];
    b->compute.pool = plxk_pool_create(threads, err, sizeof err);
    if (!b->compute.pool) {
        host->free(host, b);
        return host->status_create(host, PLX_OUT_OF_MEMORY, "%s", err);
    }
    memcpy(b->caps, cpu_ref_capabilities, sizeof cpu_ref_capabilities);
    b->caps[CPU_REF_STANDARD_CAPS] = (plx_capability){
        .key = CPU_REF_ID ".threads", .type = PLX_VALUE_INT, .int_value = (int64_t)threads};
    b->caps[CPU_REF_STANDARD_CAPS + 1] = (plx_capability){
        .key = CPU_REF_ID ".isa", .type = PLX_VALUE_STRING, .string_value = plxk_isa_name(isa)};
    *out_backend = b;
    return NULL;
}

static void cpu_ref_destroy(plx_backend *backend) {
    if (backend) {
        plxk_pool_destroy(backend->compute.pool);
        backend->host->free(backend->host, backend);
    }
}

static plx_status cpu_ref_get_capabilities(plx_backend *backend,
                                           const plx_capability **out_capabilities,
                                           size_t *out_count) {
    *out_capabilities = backend->caps;
    *out_count = CPU_REF_CAPS;
    return NULL;
}

/* ---- layers ------------------------------------------------------------- */

static plx_status cpu_ref_check_layer(plx_backend *backend, const plx_layer_view *layer) {
    const plx_host *host = backend->host;
    plxk_check_fn check;
    plxk_run_fn run;
    if (!plxk_kernel_lookup(layer->op, &check, &run)) {
        return host->status_create(host, PLX_UNSUPPORTED, "cpu_ref has no kernel for %s",
                                   plx_op_name(layer->op));
    }
    char buf[256];
    const char *reason = check(layer, buf, sizeof buf);
    return reason ? host->status_create(host, PLX_UNSUPPORTED, "%s", reason) : NULL;
}

/* Tensor handles are the SDK's host tensors (plexus/host_tensor.h): owned
 * memory, imported malloc memory or dma-bufs, sub-tensors; the factory
 * begins with what they need. */
struct plx_factory {
    plx_host_tensor_factory tensors;
    const plxk_compute *compute; /* the backend's, valid until it is destroyed */
};

/* Allocations are aligned for vector loads; kernels need the element size. */
#define CPU_REF_ALIGNMENT 64

static plx_status cpu_ref_create_factory(plx_backend *backend, const plx_factory_params *params,
                                         plx_factory **out_factory) {
    (void)params;
    const plx_host *host = backend->host;
    plx_factory *f = host->alloc(host, sizeof *f, 0);
    if (!f) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cpu_ref: out of memory");
    }
    plx_host_tensor_factory_init(&f->tensors, host, CPU_REF_ALIGNMENT);
    f->compute = &backend->compute;
    *out_factory = f;
    return NULL;
}

static void cpu_ref_destroy_factory(plx_factory *factory) {
    factory->tensors.host->free(factory->tensors.host, factory);
}

/* A workload keeps its own copy of the layer view (the host's is valid
 * during create_workload only) and buffers for the data pointers, so that
 * executing allocates nothing. */
struct plx_workload {
    const plx_host *host;
    const plxk_compute *compute;
    plxk_run_fn run;
    plx_layer_view view;
    plx_tensor_handle **inputs;
    plx_tensor_handle **outputs;
    const void **in_data;
    void **out_data;
    void *workspace; /* plxk_kernel_workspace bytes, allocated at creation */
    size_t workspace_size;
    /* What the kernel derived from the layer's constant inputs at creation
     * (plxk_kernel_prepare: packed weights), or NULL. */
    void *prepared;
    char error[512];
};

static void cpu_ref_destroy_workload(plx_workload *w) {
    const plx_host *host = w->host;
    host->free(host, (void *)w->view.name);
    host->free(host, (void *)w->view.desc);
    host->free(host, (void *)w->view.inputs);
    host->free(host, (void *)w->view.outputs);
    host->free(host, w->inputs);
    host->free(host, w->outputs);
    host->free(host, (void *)w->in_data);
    host->free(host, w->workspace);
    host->free(host, w->prepared);
    host->free(host, w->out_data);
    host->free(host, w);
}

static void *copy_to(const plx_host *host, const void *src, size_t n, bool *ok) {
    void *p = host->alloc(host, n, 0);
    if (!p) {
        *ok = false;
        return NULL;
    }
    if (n) {
        memcpy(p, src, n);
    }
    return p;
}

static plx_status cpu_ref_create_workload(plx_factory *factory, const plx_layer_view *layer,
                                          plx_tensor_handle *const *inputs,
                                          plx_tensor_handle *const *outputs,
                                          plx_workload **out_workload) {
    /* The host creates workloads only for layers check_layer accepted, with
     * the same view (docs/backend-abi.md, R-19 (3)): the layer is not
     * checked again here. */
    const plx_host *host = factory->tensors.host;
    plxk_check_fn check;
    plxk_run_fn run;
    if (!plxk_kernel_lookup(layer->op, &check, &run)) {
        return host->status_create(host, PLX_UNSUPPORTED, "cpu_ref has no kernel for %s",
                                   plx_op_name(layer->op));
    }
    plx_workload *w = host->alloc(host, sizeof *w, 0);
    if (!w) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "cpu_ref: out of memory");
    }
    memset(w, 0, sizeof *w);
    w->host = host;
    w->compute = factory->compute;
    w->run = run;
    w->view = *layer;
    bool ok = true;
    w->view.name = copy_to(host, layer->name, strlen(layer->name) + 1, &ok);
    w->view.desc = layer->desc ? copy_to(host, layer->desc, *(const uint32_t *)layer->desc, &ok)
                               : NULL;
    w->view.inputs = copy_to(host, layer->inputs, layer->input_count * sizeof *layer->inputs, &ok);
    w->view.outputs = copy_to(host, layer->outputs, layer->output_count * sizeof *layer->outputs,
                              &ok);
    w->view.input_constants = NULL;
    w->inputs = copy_to(host, inputs, layer->input_count * sizeof *inputs, &ok);
    w->outputs = copy_to(host, outputs, layer->output_count * sizeof *outputs, &ok);
    w->in_data = host->alloc(host, (layer->input_count + 1) * sizeof *w->in_data, 0);
    w->out_data = host->alloc(host, (layer->output_count + 1) * sizeof *w->out_data, 0);
    /* The kernel's scratch, once: executing allocates nothing. */
    w->workspace_size = plxk_kernel_workspace(layer, w->compute);
    if (w->workspace_size == SIZE_MAX) {
        cpu_ref_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cpu_ref: the workspace of this layer's product overflows");
    }
    if (w->workspace_size) {
        w->workspace = host->alloc(host, w->workspace_size, 64);
    }
    if (!ok || !w->in_data || !w->out_data || (w->workspace_size && !w->workspace)) {
        size_t bytes = w->workspace_size;
        cpu_ref_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cpu_ref: out of memory (workspace of %zu bytes)", bytes);
    }
    /* Constant weights packed for the GEMM, once (from `layer`, whose
     * input_constants the copy above drops). */
    size_t prepared = plxk_kernel_prepare(layer, w->compute, NULL, 0);
    if (prepared) {
        w->prepared = host->alloc(host, prepared, 64);
        if (!w->prepared) {
            cpu_ref_destroy_workload(w);
            return host->status_create(host, PLX_OUT_OF_MEMORY,
                                       "cpu_ref: out of memory (%zu bytes of packed weights)",
                                       prepared);
        }
        if (plxk_kernel_prepare(layer, w->compute, w->prepared, prepared) != prepared) {
            cpu_ref_destroy_workload(w);
            return host->status_create(host, PLX_INTERNAL,
                                       "cpu_ref: the layer's constant weights could not be packed");
        }
    }
    *out_workload = w;
    return NULL;
}

static plx_status cpu_ref_execute_workload(plx_workload *w) {
    for (uint32_t i = 0; i < w->view.input_count; i++) {
        const plx_host_tensor *t = plx_host_tensor_of(w->inputs[i]);
        w->in_data[i] = plx_host_tensor_data(t);
        if (!w->in_data[i] && t->bytes) {
            return w->host->status_create(w->host, PLX_FAILED_PRECONDITION,
                                          "cpu_ref: input %u has no memory", i);
        }
    }
    for (uint32_t i = 0; i < w->view.output_count; i++) {
        const plx_host_tensor *t = plx_host_tensor_of(w->outputs[i]);
        w->out_data[i] = plx_host_tensor_data(t);
        if (!w->out_data[i] && t->bytes) {
            return w->host->status_create(w->host, PLX_FAILED_PRECONDITION,
                                          "cpu_ref: output %u has no memory", i);
        }
    }
    plxk_kernel_args args = {.layer = &w->view,
                                .inputs = w->in_data,
                                .outputs = w->out_data,
                                .error = w->error,
                                .error_size = sizeof w->error,
                                .compute = w->compute,
                                .workspace = w->workspace,
                                .workspace_size = w->workspace_size,
                                .prepared = w->prepared};
    w->error[0] = '\0';
    if (!w->run(&args)) {
        return w->host->status_create(w->host, PLX_INVALID_ARGUMENT, "%s",
                                      w->error[0] ? w->error : "cpu_ref: kernel failed");
    }
    return NULL;
}

/* fusions (fusion.c), unless the option turned them off. */
static plx_status cpu_ref_optimize(plx_backend *backend, const plx_subgraph_view *subgraph,
                                   const plx_subgraph_editor *editor) {
    return backend->fusion ? plxk_optimize_subgraph(backend->host, subgraph, editor) : NULL;
}

static const plx_backend_functions cpu_ref_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, optimize_subgraph),
    .check_available = NULL, /* the CPU is always there */
    .create = cpu_ref_create,
    .destroy = cpu_ref_destroy,
    .get_capabilities = cpu_ref_get_capabilities,
    .check_layer = cpu_ref_check_layer,
    .create_factory = cpu_ref_create_factory,
    .destroy_factory = cpu_ref_destroy_factory,
    .factory_workloads_created = NULL,
    PLX_HOST_TENSOR_FUNCTIONS,
    .create_workload = cpu_ref_create_workload,
    .destroy_workload = cpu_ref_destroy_workload,
    .configure_workload = NULL,
    .execute_workload = cpu_ref_execute_workload,
    .get_memory_strategy = NULL,
    .optimize_subgraph = cpu_ref_optimize,
};

static const plx_backend_descriptor cpu_ref_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .id = "cpu_ref",
    .name = "CPU reference backend",
    .version = "0.1.0",
    .functions = &cpu_ref_functions,
    .options = cpu_ref_options,
    .option_count = CPU_REF_OPTION_COUNT,
};

/* the descriptor claims the SDK's minor version; a host older than
 * that refuses it with a clear reason, so only the major needs checking. */
const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR, "cpu_ref implements backend ABI %d.x; the host implements %u.%u",
                  PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_GET_MAJOR(host_abi_version),
                  PLX_ABI_VERSION_GET_MINOR(host_abi_version));
        return NULL;
    }
    return &cpu_ref_descriptor;
}
