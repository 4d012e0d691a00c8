/* cpu_ref: the CPU backend, as a plug-in built with the SDK alone.
 *
 * This file holds the plug-in's entry point, descriptor and capabilities.
 * The capabilities are those the CPU backend is designed for: its memory is
 * ordinary host memory, so it can run executions concurrently on separate
 * working memory, let the host plan that memory, pre-import inputs and
 * outputs, and import or lend malloc memory. Tensor handles and workloads
 * arrive with the networks issue; until then the ABI has no call that
 * would exercise them. */
#include <plexus/backend.h>

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
};

static const plx_capability cpu_ref_capabilities[] = {
    {.key = PLX_CAP_ASYNC_EXECUTION, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_EXTERNALLY_MANAGED_MEMORY, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_PREIMPORT_IO_TENSORS, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_IMPORT_MALLOC, .type = PLX_VALUE_BOOL, .bool_value = true},
    {.key = PLX_CAP_EXPORT_MALLOC, .type = PLX_VALUE_BOOL, .bool_value = true},
};

/* The host passes only declared options; cpu_ref declares none, so
 * option_count is always 0 here. */
static plx_status cpu_ref_create(const plx_host *host, const plx_option *options,
                                 size_t option_count, plx_backend **out_backend) {
    (void)options;
    (void)option_count;
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cpu_ref: cannot allocate the backend instance");
    }
    b->host = host;
    *out_backend = b;
    return NULL;
}

static void cpu_ref_destroy(plx_backend *backend) {
    if (backend) {
        backend->host->free(backend->host, backend);
    }
}

static plx_status cpu_ref_get_capabilities(plx_backend *backend,
                                           const plx_capability **out_capabilities,
                                           size_t *out_count) {
    (void)backend;
    *out_capabilities = cpu_ref_capabilities;
    *out_count = sizeof cpu_ref_capabilities / sizeof cpu_ref_capabilities[0];
    return NULL;
}

static const plx_backend_functions cpu_ref_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities),
    .check_available = NULL, /* the CPU is always there */
    .create = cpu_ref_create,
    .destroy = cpu_ref_destroy,
    .get_capabilities = cpu_ref_get_capabilities,
};

static const plx_backend_descriptor cpu_ref_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .id = "cpu_ref",
    .name = "CPU reference backend",
    .version = "0.1.0",
    .functions = &cpu_ref_functions,
    .options = NULL,
    .option_count = 0,
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
