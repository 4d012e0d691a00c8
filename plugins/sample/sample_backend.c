/* The sample backend: the smallest complete Plexus backend plug-in.
 *
 * Copy this file to start a backend of your own (plugins/sample/README.md).
 * It shows everything the backend ABI asks of every plug-in
 * (docs/backend-abi.md, "Plexus backend ABI 1.1") and nothing more. It runs
 * no layers: the ABI 1.1 network functions are an optional
 * group, shown complete in cpu_ref/cpu_ref_backend.c.
 *
 *   - one exported symbol, plx_backend_entry, that checks the host's ABI
 *     version and returns a static descriptor;
 *   - a static function table with the two required functions (create,
 *     destroy) and the two optional ones (check_available,
 *     get_capabilities);
 *   - one declared option, `greeting`, validated in create;
 *   - capabilities: one vendor key, `sample.greeting`;
 *   - memory from host->alloc, errors from host->status_create, the host
 *     table kept in the instance and never in a global (R-12..R-14).
 *
 * It has no kernels, so it reports no standard capability: a capability
 * says what a backend can do, and listing one as false says nothing
 * (R-11).
 *
 * Includes only the SDK header and standard headers, and links nothing
 * from libplexus: build it with -fvisibility=hidden and
 * -Wl,-z,defs. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <plexus/backend.h>

#define SAMPLE_ID "sample"
#define SAMPLE_GREETING_KEY "greeting"
#define SAMPLE_GREETING_DEFAULT "hello"

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
    plx_capability capabilities[1];
};

/* Says whether the backend can work on this machine.
 *
 * The sample computes nothing and needs nothing, so it is always available
 * and returns NULL. A real backend checks here, cheaply and without
 * keeping anything, what it needs at run time: that its device node exists
 * and can be opened, that the vendor driver library can be dlopen()ed and
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

    /* A vendor key, namespaced with the backend id, which the host lists
     * untouched. Unused members of the struct are zeroed. */
    memset(backend->capabilities, 0, sizeof backend->capabilities);
    backend->capabilities[0].key = "sample.greeting";
    backend->capabilities[0].type = PLX_VALUE_STRING;
    backend->capabilities[0].string_value = backend->greeting;

    *out_backend = backend;
    return NULL;
}

/* Releases an instance and everything it holds, with the allocator it came
 * from.
 *
 * Ownership: `backend` is invalid after the call, and so are the
 * capabilities it handed out.
 * Threads: called once, on the thread that destroys the runtime, after
 * every other call on the instance has returned. */
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

/* The function table and the descriptor: static const, so they need no
 * release and stay valid while the plug-in is loaded. */
static const plx_backend_functions sample_functions = {
    .struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities),
    .check_available = sample_check_available,
    .create = sample_create,
    .destroy = sample_destroy,
    .get_capabilities = sample_get_capabilities,
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
    .version = "1.0.0",
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
