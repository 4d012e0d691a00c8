/* One source, many fakes: every test plug-in of the registry suite is this
 * file, compiled with a different -D switch (tests/plugins/meson.build).
 * Without switches it is a well-behaved backend, `fake_good`; each switch
 * breaks exactly one rule of the backend ABI (docs/backend-abi.md) so that a
 * test can check the host's reaction to that one fault.
 *
 * Switches (at most one fault per build):
 *   FAKE_ID="..."             the backend id (default "fake_good")
 *   FAKE_NO_ENTRY             export no plx_backend_entry (a plain .so)
 *   FAKE_ENTRY_NULL           entry logs an error, then returns NULL
 *   FAKE_ENTRY_NULL_SILENT    entry returns NULL without logging
 *   FAKE_ABI_MAJOR, FAKE_ABI_MINOR
 *                             the ABI version the descriptor declares
 *   FAKE_DESC_SIZE=n          descriptor struct_size n
 *   FAKE_DESC_SIZE_UPTO=field descriptor struct_size ending at `field`
 *   FAKE_FUNCS_NULL           descriptor without a function table
 *   FAKE_FUNCS_SIZE_UPTO=field
 *                             function table struct_size ending at `field`
 *   FAKE_NULL_CREATE, FAKE_NULL_DESTROY
 *                             a required function left NULL
 *   FAKE_UNAVAILABLE          check_available says no
 *   FAKE_CREATE_FAILS         create returns a status
 *   FAKE_CAPS_BAD_TYPE        a standard key with the wrong type
 *   FAKE_CAPS_UNKNOWN_KEY     a key that is neither standard nor namespaced
 *   FAKE_CAPS_BAD_ALIGNMENT   import_alignment that is not a power of two
 *   FAKE_CAPS_EMPTY_DOMAIN    an empty fence_domain
 *   FAKE_CAPS_ALLOCATES       allocates_planned_memory without the functions
 *   FAKE_CAPS_EXPORTS_DMA_BUF memory_export_dma_buf without export_external_memory
 *                             it needs
 *   FAKE_CAPS_VENDOR_ONLY     no standard capability, only the vendor ones: nothing
 *                             says the backend means to run layers
 *   FAKE_MISBEHAVE=what, FAKE_MISBEHAVE_IN=where
 *                             a plug-in no in-process host survives (only the
 *                             probe of docs/backend-abi.md does): `what` is
 *                             FAKE_CRASH (SIGSEGV), FAKE_ABORT, FAKE_EXIT
 *                             (exit(0)), FAKE_HANG (sleeps forever) or
 *                             FAKE_STDOUT (writes to stdout), `where`
 *                             FAKE_IN_CONSTRUCTOR, FAKE_IN_ENTRY,
 *                             FAKE_IN_CHECK_AVAILABLE, FAKE_IN_CREATE,
 *                             FAKE_IN_CREATE_FAST (create with option
 *                             mode=fast only) or FAKE_IN_DESTROY. Built into
 *                             tests/plugins/hostile
 *                             only, which in-process tests never scan.
 *
 * Links nothing from libplexus and keeps the host table only in the
 * instance. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plexus/backend.h>

enum { FAKE_CRASH = 1, FAKE_ABORT, FAKE_EXIT, FAKE_HANG, FAKE_STDOUT };
enum { FAKE_IN_CONSTRUCTOR = 1, FAKE_IN_ENTRY, FAKE_IN_CHECK_AVAILABLE, FAKE_IN_CREATE,
       FAKE_IN_CREATE_FAST, FAKE_IN_DESTROY };

/* Does FAKE_MISBEHAVE when `where` is FAKE_MISBEHAVE_IN. */
__attribute__((unused)) static void misbehave(int where) {
#ifdef FAKE_MISBEHAVE
    if (where != FAKE_MISBEHAVE_IN) {
        return;
    }
    switch (FAKE_MISBEHAVE) {
    case FAKE_CRASH:
        raise(SIGSEGV);
        break;
    case FAKE_ABORT:
        abort();
    case FAKE_EXIT:
        exit(0);
    case FAKE_HANG:
        for (;;) {
            pause();
        }
    case FAKE_STDOUT:
        fputs("hello from a plug-in\n", stdout);
        fflush(stdout);
        break;
    }
#else
    (void)where;
#endif
}

#if defined(FAKE_MISBEHAVE) && FAKE_MISBEHAVE_IN == FAKE_IN_CONSTRUCTOR
__attribute__((constructor)) static void fake_constructor(void) {
    misbehave(FAKE_IN_CONSTRUCTOR);
}
#endif

#ifndef FAKE_ID
#define FAKE_ID "fake_good"
#endif

#ifdef FAKE_NO_ENTRY

/* A real shared object with an exported function, but no Plexus entry
 * point: what the host sees when a directory holds an unrelated library. */
__attribute__((visibility("default"))) int fake_not_a_plexus_backend(int x);
__attribute__((visibility("default"))) int fake_not_a_plexus_backend(int x) {
    return x + 1;
}

#else /* !FAKE_NO_ENTRY */

#define FAKE_MODE_KEY "mode"

/* A fault switch can leave a function out of the table. */
#define FAKE_MAYBE_UNUSED __attribute__((unused))

struct plx_backend {
    const plx_host *host;
    plx_capability capabilities[6];
    size_t capability_count;
};

static plx_status fake_check_available(const plx_host *host) {
    misbehave(FAKE_IN_CHECK_AVAILABLE);
#ifdef FAKE_UNAVAILABLE
    return host->status_create(host, PLX_UNAVAILABLE,
                               "no fake accelerator found: /dev/fake0 does not exist");
#else
    (void)host;
    return NULL;
#endif
}

FAKE_MAYBE_UNUSED static plx_status fake_create(const plx_host *host, const plx_option *options,
                              size_t option_count, plx_backend **out_backend) {
    misbehave(FAKE_IN_CREATE);
    *out_backend = NULL;
#ifdef FAKE_CREATE_FAILS
    (void)options;
    (void)option_count;
    return host->status_create(host, PLX_UNAVAILABLE,
                               "backend '%s': firmware handshake timed out", FAKE_ID);
#else
    for (size_t i = 0; i < option_count; i++) {
        if (strcmp(options[i].key, FAKE_MODE_KEY) == 0 && strcmp(options[i].value, "fast") == 0) {
            misbehave(FAKE_IN_CREATE_FAST);
        }
        if (strcmp(options[i].key, FAKE_MODE_KEY) == 0 && strcmp(options[i].value, "fast") != 0 &&
            strcmp(options[i].value, "exact") != 0) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "invalid value '%s' for option '%s': expected fast or exact",
                                       options[i].value, options[i].key);
        }
    }
    struct plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (b == NULL) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(b, 0, sizeof *b);
    b->host = host;
    plx_capability *c = b->capabilities;
    size_t n = 0;
#ifndef FAKE_CAPS_VENDOR_ONLY
    c[n].key = PLX_CAP_ASYNC_EXECUTION;
#ifdef FAKE_CAPS_BAD_TYPE
    c[n].type = PLX_VALUE_INT; /* standard keys are boolean */
    c[n].int_value = 1;
#else
    c[n].type = PLX_VALUE_BOOL;
    c[n].bool_value = true;
#endif
    n++;
    /* Present but false: must not count. */
    c[n].key = PLX_CAP_EXTERNALLY_MANAGED_MEMORY;
    c[n].type = PLX_VALUE_BOOL;
    c[n].bool_value = false;
    n++;
    c[n].key = PLX_CAP_IMPORT_MALLOC;
    c[n].type = PLX_VALUE_BOOL;
    c[n].bool_value = true;
    n++;
#endif
    c[n].key = "acme.tile_count";
    c[n].type = PLX_VALUE_INT;
    c[n].int_value = 4;
    n++;
    c[n].key = "acme.codename";
    c[n].type = PLX_VALUE_STRING;
    c[n].string_value = "roadrunner";
    n++;
#ifdef FAKE_CAPS_UNKNOWN_KEY
    c[n].key = "turbo"; /* neither standard nor vendor.name */
    c[n].type = PLX_VALUE_BOOL;
    c[n].bool_value = true;
    n++;
#endif
#ifdef FAKE_CAPS_BAD_ALIGNMENT
    c[n].key = PLX_CAP_IMPORT_ALIGNMENT;
    c[n].type = PLX_VALUE_INT;
    c[n].int_value = 48;
    n++;
#endif
#ifdef FAKE_CAPS_EMPTY_DOMAIN
    c[n].key = PLX_CAP_FENCE_DOMAIN;
    c[n].type = PLX_VALUE_STRING;
    c[n].string_value = "";
    n++;
#endif
#ifdef FAKE_CAPS_ALLOCATES
    c[n].key = PLX_CAP_ALLOCATES_PLANNED_MEMORY;
    c[n].type = PLX_VALUE_BOOL;
    c[n].bool_value = true;
    n++;
#endif
#ifdef FAKE_CAPS_EXPORTS_DMA_BUF
    c[n].key = PLX_CAP_EXPORT_DMA_BUF;
    c[n].type = PLX_VALUE_BOOL;
    c[n].bool_value = true;
    n++;
#endif
    b->capability_count = n;
    *out_backend = b;
    return NULL;
#endif
}

FAKE_MAYBE_UNUSED static void fake_destroy(plx_backend *backend) {
    misbehave(FAKE_IN_DESTROY);
    if (backend != NULL) {
        backend->host->free(backend->host, backend);
    }
}

static plx_status fake_get_capabilities(plx_backend *backend,
                                        const plx_capability **out_capabilities,
                                        size_t *out_count) {
    *out_capabilities = backend->capabilities;
    *out_count = backend->capability_count;
    return NULL;
}

FAKE_MAYBE_UNUSED static const plx_backend_functions fake_functions = {
#if defined(FAKE_FUNCS_SIZE_UPTO)
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, FAKE_FUNCS_SIZE_UPTO),
#else
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities),
#endif
    .check_available = fake_check_available,
#ifdef FAKE_NULL_CREATE
    .create = NULL,
#else
    .create = fake_create,
#endif
#ifdef FAKE_NULL_DESTROY
    .destroy = NULL,
#else
    .destroy = fake_destroy,
#endif
    .get_capabilities = fake_get_capabilities,
};

static const plx_option_info fake_options[] = {
    {FAKE_MODE_KEY, "fast or exact arithmetic", "exact"},
};

#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR PLX_ABI_VERSION_MAJOR
#endif
#ifndef FAKE_ABI_MINOR
#define FAKE_ABI_MINOR PLX_ABI_VERSION_MINOR
#endif

FAKE_MAYBE_UNUSED static const plx_backend_descriptor fake_descriptor = {
#if defined(FAKE_DESC_SIZE)
    .struct_size = FAKE_DESC_SIZE,
#elif defined(FAKE_DESC_SIZE_UPTO)
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, FAKE_DESC_SIZE_UPTO),
#else
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
#endif
    .abi_version = PLX_MAKE_ABI_VERSION(FAKE_ABI_MAJOR, FAKE_ABI_MINOR),
    .id = FAKE_ID,
    .name = "Fake backend (" FAKE_ID ")",
    .version = "0.0.1",
#ifdef FAKE_FUNCS_NULL
    .functions = NULL,
#else
    .functions = &fake_functions,
#endif
    .options = fake_options,
    .option_count = sizeof fake_options / sizeof fake_options[0],
};

const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    misbehave(FAKE_IN_ENTRY);
#if defined(FAKE_ENTRY_NULL)
    (void)host_abi_version;
    host->log(host, PLX_LOG_ERROR, "fake_entry_null: needs a fake accelerator driver >= %d.%d", 9,
              1);
    return NULL;
#elif defined(FAKE_ENTRY_NULL_SILENT)
    (void)host_abi_version;
    (void)host;
    return NULL;
#else
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR, "%s: built for ABI major %u, the host has %u", FAKE_ID,
                  (unsigned)PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_GET_MAJOR(host_abi_version));
        return NULL;
    }
    return &fake_descriptor;
#endif
}

#endif /* FAKE_NO_ENTRY */
