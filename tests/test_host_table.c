/* The tests' host table (test_host_table.h). */
#define _POSIX_C_SOURCE 200809L

#include "test_host_table.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int th_live_allocations;
unsigned long th_allocation_count;
char th_last_warning[1024];
unsigned th_warning_count;
th_event th_events[256];
size_t th_event_count;

void th_reset(void) {
    th_event_count = 0;
    th_warning_count = 0;
    th_last_warning[0] = '\0';
}

static void th_log(const plx_host *host, plx_log_level level, const char *fmt, ...) {
    (void)host;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (level >= PLX_LOG_WARN) {
        snprintf(th_last_warning, sizeof th_last_warning, "%s", line);
        th_warning_count++;
    }
    const char *show = getenv("PLEXUS_TEST_LOG");
    if (show && *show && strcmp(show, "0") != 0) {
        fprintf(stderr, "[%d] %s\n", (int)level, line);
    }
}

static void *th_alloc(const plx_host *host, size_t size, size_t alignment) {
    (void)host;
    if (alignment < sizeof(void *) * 2) {
        alignment = sizeof(void *) * 2;
    }
    void *p = NULL;
    if (posix_memalign(&p, alignment, size ? size : 1) != 0) {
        return NULL;
    }
    th_live_allocations++;
    th_allocation_count++;
    return p;
}

static void th_free(const plx_host *host, void *p) {
    (void)host;
    if (p) {
        th_live_allocations--;
        free(p);
    }
}

static plx_status th_status_create(const plx_host *host, plx_status_code code, const char *fmt,
                                   ...) {
    (void)host;
    plx_status s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "test host table: out of memory for a status\n");
        exit(2);
    }
    s->code = code == PLX_OK ? PLX_INTERNAL : code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message, sizeof s->message, fmt, ap);
    va_end(ap);
    return s;
}

static plx_status_code th_status_code(const plx_host *host, plx_status s) {
    (void)host;
    return s ? s->code : PLX_OK;
}

static const char *th_status_message(const plx_host *host, plx_status s) {
    (void)host;
    return s ? s->message : "OK";
}

static void th_status_free(const plx_host *host, plx_status s) {
    (void)host;
    free(s);
}

static uint64_t th_now_ns(const plx_host *host) {
    (void)host;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void th_record_event(const plx_host *host, const plx_profile_event *e) {
    (void)host;
    if (!e || e->struct_size < PLX_STRUCT_SIZE_UPTO(plx_profile_event, clock_sync_host_ns) ||
        !e->name || th_event_count >= sizeof th_events / sizeof th_events[0]) {
        return; /* as the runtime drops a malformed event */
    }
    th_event *g = &th_events[th_event_count++];
    snprintf(g->name, sizeof g->name, "%s", e->name);
    snprintf(g->category, sizeof g->category, "%s", e->category ? e->category : "");
    snprintf(g->layer, sizeof g->layer, "%s", e->layer ? e->layer : "");
    g->network_id = e->network_id;
    g->host_start_ns = e->clock_sync_host_ns + (e->start_ns - e->clock_sync_backend_ns);
    g->duration_ns = e->duration_ns;
    g->clock_sync_backend_ns = e->clock_sync_backend_ns;
}

const plx_host th_host = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_host, record_event),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .log = th_log,
    .alloc = th_alloc,
    .free = th_free,
    .status_create = th_status_create,
    .status_code = th_status_code,
    .status_message = th_status_message,
    .status_free = th_status_free,
    .host_data = NULL,
    .now_ns = th_now_ns,
    .record_event = th_record_event,
};
