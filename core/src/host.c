/* The host service table handed to backends (backend.h, struct plx_host). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static plxi_backend_record *record_of(const plx_host *host) {
    return (plxi_backend_record *)host->host_data;
}

/* Appends an error-level message to the record's capture, so that an
 * entry point returning NULL is reported with the backend's own words. Only
 * runs on the thread creating the runtime: capture_errors is set just
 * around the entry call. */
static void capture(plxi_backend_record *record, const char *fmt, va_list ap) PLXI_PRINTF(2, 0);
static void capture(plxi_backend_record *record, const char *fmt, va_list ap) {
    char *msg = plxi_vasprintf(fmt, ap);
    if (!msg) {
        return;
    }
    if (!record->captured_errors) {
        record->captured_errors = msg;
        return;
    }
    char *joined = plxi_asprintf("%s; %s", record->captured_errors, msg);
    free(msg);
    if (joined) {
        free(record->captured_errors);
        record->captured_errors = joined;
    }
}

static void host_log(const plx_host *host, plx_log_level level, const char *fmt, ...)
    PLXI_PRINTF(3, 4);
static void host_log(const plx_host *host, plx_log_level level, const char *fmt, ...) {
    if (!host || !fmt) {
        return;
    }
    plxi_backend_record *record = record_of(host);
    va_list ap;
    if (record->capture_errors && level == PLX_LOG_ERROR) {
        va_start(ap, fmt);
        capture(record, fmt, ap);
        va_end(ap);
    }
    if ((unsigned)level > PLX_LOG_DEBUG) {
        level = PLX_LOG_DEBUG;
    }
    va_start(ap, fmt);
    plxi_vlog(record->logger, level, record->log_source, fmt, ap);
    va_end(ap);
}

static void *host_alloc(const plx_host *host, size_t size, size_t alignment) {
    if (alignment == 0) {
        alignment = _Alignof(max_align_t);
    }
    if ((alignment & (alignment - 1)) != 0) {
        return NULL;
    }
    const plx_runtime *rt = host ? record_of(host)->runtime : NULL;
    if (rt && rt->has_host_allocator) {
        return rt->host_allocator.allocate(rt->host_allocator.user_data, size ? size : 1,
                                           alignment);
    }
    if (alignment < sizeof(void *)) {
        alignment = sizeof(void *);
    }
    void *p = NULL;
    if (posix_memalign(&p, alignment, size ? size : 1) != 0) {
        return NULL;
    }
    return p;
}

static void host_free(const plx_host *host, void *ptr) {
    const plx_runtime *rt = host ? record_of(host)->runtime : NULL;
    if (ptr && rt && rt->has_host_allocator) {
        rt->host_allocator.free(rt->host_allocator.user_data, ptr);
        return;
    }
    free(ptr);
}

static plx_status host_status_create(const plx_host *host, plx_status_code code,
                                     const char *fmt, ...) PLXI_PRINTF(3, 4);
static plx_status host_status_create(const plx_host *host, plx_status_code code,
                                     const char *fmt, ...) {
    (void)host;
    if (!fmt) {
        return plxi_status_create(PLX_INTERNAL, "backend created a status without a message");
    }
    va_list ap;
    va_start(ap, fmt);
    plx_status s = plxi_status_vcreate(code, fmt, ap);
    va_end(ap);
    return s;
}

static plx_status_code host_status_code(const plx_host *host, plx_status status) {
    (void)host;
    return plx_status_get_code(status);
}

static const char *host_status_message(const plx_host *host, plx_status status) {
    (void)host;
    return plx_status_get_message(status);
}

static void host_status_free(const plx_host *host, plx_status status) {
    (void)host;
    plx_status_free(status);
}

static uint64_t host_now_ns(const plx_host *host) {
    (void)host;
    return plxi_now_ns();
}

/* a backend's own event, placed on the host's clock through the
 * event's clock mapping. */
static void host_record_event(const plx_host *host, const plx_profile_event *e) {
    if (!host) {
        return;
    }
    plxi_backend_record *record = record_of(host);
    plx_runtime *rt = record->runtime;
    if (!rt || !plxi_profiling(rt) || !e ||
        e->struct_size < PLX_STRUCT_SIZE_UPTO(plx_profile_event, clock_sync_host_ns) || !e->name) {
        return;
    }
    uint64_t start = e->start_ns;
    if (e->clock_sync_backend_ns || e->clock_sync_host_ns) {
        /* host = sync_host + (start - sync_backend), in wrapping unsigned
         * arithmetic: start may lie before the sync point. */
        start = e->clock_sync_host_ns + (e->start_ns - e->clock_sync_backend_ns);
    }
    plxi_profile_record_device(rt, e->name, e->category ? e->category : "device", e->layer,
                               record->info.id, e->network_id, start, e->duration_ns);
}

void plxi_host_init(plxi_backend_record *record) {
    plx_host *h = &record->host;
    memset(h, 0, sizeof *h);
    h->struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_host, record_event);
    h->abi_version = PLX_ABI_VERSION;
    h->log = host_log;
    h->alloc = host_alloc;
    h->free = host_free;
    h->status_create = host_status_create;
    h->status_code = host_status_code;
    h->status_message = host_status_message;
    h->status_free = host_status_free;
    h->host_data = record;
    h->now_ns = host_now_ns;
    h->record_event = host_record_event;
}
