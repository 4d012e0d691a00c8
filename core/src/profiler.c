/* The profiler: counters (always on) and trace events (when enabled),
 * written as Chrome trace-event JSON (network.h, "Profiling and counters").
 *
 * Events are fixed-size records with their strings copied in, so nothing
 * they name (a layer, a backend) has to outlive them. They go into one
 * array under a mutex, grown by doubling. Disabled, the hot paths read one
 * relaxed flag (plxi_profiling) and nothing else. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <plexus/network.h>

#include "internal.h"

#define NAME_BYTES 64
#define SHORT_BYTES 32
#define INITIAL_CAPACITY 1024

typedef struct event {
    char name[NAME_BYTES];
    char category[SHORT_BYTES];
    char op[SHORT_BYTES];
    char backend[NAME_BYTES];
    /* A backend's own event: its layer, on the backend's track. */
    char layer[NAME_BYTES];
    bool device;
    uint32_t network;
    uint32_t thread;
    uint64_t start_ns;
    uint64_t duration_ns;
} event;

struct plxi_profiler {
    pthread_mutex_t lock; /* events, count, capacity, dropped */
    event *events;
    size_t count;
    size_t capacity;
    uint64_t dropped;
    uint64_t epoch_ns;    /* ts 0 in the trace: the first enable */
};

/* Small thread numbers for "tid": 1, 2, ... in order of first event. */
static atomic_uint next_thread;
static _Thread_local uint32_t this_thread;

static uint32_t thread_number(void) {
    if (this_thread == 0) {
        this_thread = atomic_fetch_add_explicit(&next_thread, 1, memory_order_relaxed) + 1;
    }
    return this_thread;
}

uint64_t plxi_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copies at most size - 1 bytes of src, never ending inside a UTF-8
 * sequence, so that a truncated name is still valid text. */
static void copy_text(char *dst, size_t size, const char *src) {
    if (!src) {
        src = "";
    }
    size_t len = strnlen(src, size - 1);
    if (src[len] != '\0') {
        /* Truncated: src[len] is the first byte left out; when it continues
         * a sequence, leave out that sequence's earlier bytes too. */
        while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80) {
            len--;
        }
    }
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static struct plxi_profiler *profiler_of(const plx_runtime *rt) {
    return atomic_load_explicit(&((plx_runtime *)rt)->profiler, memory_order_acquire);
}

static void store(struct plxi_profiler *p, const event *e);

/* Fills and stores one event; `op` for the host's, `layer` (and device
 * true) for a backend's own. */
static void record(plx_runtime *rt, const char *name, const char *category, const char *op,
                   const char *layer, const char *backend, uint32_t network, bool device,
                   uint64_t start_ns, uint64_t duration_ns) {
    struct plxi_profiler *p = profiler_of(rt);
    if (!p) {
        return;
    }
    event e;
    copy_text(e.name, sizeof e.name, name);
    copy_text(e.category, sizeof e.category, category);
    copy_text(e.op, sizeof e.op, op);
    copy_text(e.backend, sizeof e.backend, backend);
    copy_text(e.layer, sizeof e.layer, layer);
    e.device = device;
    e.network = network;
    /* A backend's events are numbered per backend when the trace is
     * written; the host's carry their thread. */
    e.thread = device ? 0 : thread_number();
    e.start_ns = start_ns;
    e.duration_ns = duration_ns;
    store(p, &e);
}

void plxi_profile_record(plx_runtime *rt, const char *name, const char *category,
                         const char *op, const char *backend, uint32_t network,
                         uint64_t start_ns, uint64_t end_ns) {
    record(rt, name, category, op, NULL, backend, network, false, start_ns,
           end_ns > start_ns ? end_ns - start_ns : 0);
}

void plxi_profile_record_device(plx_runtime *rt, const char *name, const char *category,
                                const char *layer, const char *backend, uint32_t network,
                                uint64_t start_ns, uint64_t duration_ns) {
    record(rt, name, category, NULL, layer, backend, network, true, start_ns, duration_ns);
}

/* Appends an event, or counts it as dropped. */
static void store(struct plxi_profiler *p, const event *e) {
    pthread_mutex_lock(&p->lock);
    if (p->count == p->capacity) {
        size_t capacity = p->capacity ? p->capacity * 2 : INITIAL_CAPACITY;
        event *grown = capacity > SIZE_MAX / sizeof *grown
                           ? NULL
                           : realloc(p->events, capacity * sizeof *grown);
        if (!grown) {
            p->dropped++;
            pthread_mutex_unlock(&p->lock);
            return;
        }
        p->events = grown;
        p->capacity = capacity;
    }
    p->events[p->count++] = *e;
    pthread_mutex_unlock(&p->lock);
}

void plxi_profiler_destroy(plx_runtime *rt) {
    struct plxi_profiler *p = profiler_of(rt);
    if (!p) {
        return;
    }
    atomic_store(&rt->profiler, NULL);
    pthread_mutex_destroy(&p->lock);
    free(p->events);
    free(p);
}

PLX_API void plx_runtime_counters(const plx_runtime *runtime, plx_counters *out) {
    if (!out) {
        return;
    }
    memset(out, 0, sizeof *out);
    if (!runtime) {
        return;
    }
    out->networks_loaded = atomic_load(&runtime->networks_loaded);
    out->inferences_run = atomic_load(&runtime->inferences_run);
    out->inferences_failed = atomic_load(&runtime->inferences_failed);
}

PLX_API plx_status plx_runtime_enable_profiling(plx_runtime *runtime, bool enabled) {
    if (!runtime) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "runtime is NULL");
    }
    if (enabled && !profiler_of(runtime)) {
        /* loaded_lock serialises concurrent first enables. */
        pthread_mutex_lock(&runtime->loaded_lock);
        if (!profiler_of(runtime)) {
            struct plxi_profiler *p = calloc(1, sizeof *p);
            if (!p) {
                pthread_mutex_unlock(&runtime->loaded_lock);
                return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory (profiler)");
            }
            pthread_mutex_init(&p->lock, NULL);
            p->epoch_ns = plxi_now_ns();
            atomic_store_explicit(&runtime->profiler, p, memory_order_release);
        }
        pthread_mutex_unlock(&runtime->loaded_lock);
    }
    atomic_store_explicit(&runtime->profiling, enabled, memory_order_release);
    return NULL;
}

PLX_API size_t plx_runtime_trace_event_count(const plx_runtime *runtime) {
    struct plxi_profiler *p = runtime ? profiler_of(runtime) : NULL;
    if (!p) {
        return 0;
    }
    pthread_mutex_lock(&p->lock);
    size_t count = p->count;
    pthread_mutex_unlock(&p->lock);
    return count;
}

PLX_API void plx_runtime_clear_trace(plx_runtime *runtime) {
    struct plxi_profiler *p = runtime ? profiler_of(runtime) : NULL;
    if (!p) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->count = 0;
    p->dropped = 0;
    pthread_mutex_unlock(&p->lock);
}

/* A JSON string: quotes, backslashes and control characters escaped; other
 * bytes (UTF-8) as they are. */
static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            fputc('\\', f);
            fputc(*c, f);
        } else if (*c < 0x20 || *c == 0x7F) {
            fprintf(f, "\\u%04x", *c);
        } else {
            fputc(*c, f);
        }
    }
    fputc('"', f);
}

/* Backends with events of their own, each on a track numbered
 * after the host's threads. */
#define MAX_DEVICE_TRACKS 32
typedef struct device_tracks {
    const char *backend[MAX_DEVICE_TRACKS];
    uint32_t count;
    uint32_t first_tid; /* the first backend's track */
} device_tracks;

/* The track of a device event: its backend's, or the last one's when
 * more backends than tracks report events. */
static uint32_t device_tid(const device_tracks *t, const event *e) {
    for (uint32_t i = 0; i < t->count; i++) {
        if (strcmp(t->backend[i], e->backend) == 0) {
            return t->first_tid + i;
        }
    }
    return t->first_tid + t->count - 1;
}

static void put_thread_names(FILE *f, const struct plxi_profiler *p, device_tracks *tracks) {
    /* One "thread_name" per thread number seen; numbers are small and
     * dense, so a bitmap over the largest one suffices. */
    uint32_t max = 0;
    tracks->count = 0;
    for (size_t i = 0; i < p->count; i++) {
        const event *e = &p->events[i];
        if (!e->device) {
            max = e->thread > max ? e->thread : max;
            continue;
        }
        bool known = false;
        for (uint32_t k = 0; k < tracks->count && !known; k++) {
            known = strcmp(tracks->backend[k], e->backend) == 0;
        }
        if (!known && tracks->count < MAX_DEVICE_TRACKS) {
            tracks->backend[tracks->count++] = e->backend;
        }
    }
    tracks->first_tid = max + 1;
    for (uint32_t k = 0; k < tracks->count; k++) {
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu32
                   ",\"args\":{\"name\":",
                tracks->first_tid + k);
        char label[NAME_BYTES + 8];
        snprintf(label, sizeof label, "%s device", tracks->backend[k]);
        put_string(f, label);
        fputs("}}", f);
    }
    unsigned char *seen = calloc((size_t)max + 1, 1);
    for (size_t i = 0; i < p->count; i++) {
        uint32_t t = p->events[i].thread;
        if (p->events[i].device || (seen && seen[t])) {
            continue;
        }
        if (seen) {
            seen[t] = 1;
        }
        fprintf(f,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%" PRIu32
                ",\"args\":{\"name\":\"thread %" PRIu32 "\"}}",
                t, t);
        if (!seen) {
            break; /* out of memory: names are optional */
        }
    }
    free(seen);
}

static void put_events(FILE *f, const struct plxi_profiler *p) {
    fputs("{\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"plexus\"}}",
          f);
    device_tracks tracks;
    put_thread_names(f, p, &tracks);
    for (size_t i = 0; i < p->count; i++) {
        const event *e = &p->events[i];
        uint64_t start = e->start_ns > p->epoch_ns ? e->start_ns - p->epoch_ns : 0;
        fputs(",\n{\"name\":", f);
        put_string(f, e->name);
        fputs(",\"cat\":", f);
        put_string(f, e->category);
        fprintf(f, ",\"ph\":\"X\",\"ts\":%" PRIu64 ".%03u,\"dur\":%" PRIu64 ".%03u", start / 1000,
                (unsigned)(start % 1000), e->duration_ns / 1000,
                (unsigned)(e->duration_ns % 1000));
        uint32_t tid = e->device ? device_tid(&tracks, e) : e->thread;
        fprintf(f, ",\"pid\":1,\"tid\":%" PRIu32 ",\"args\":{", tid);
        if (e->device) {
            fputs("\"layer\":", f);
            put_string(f, e->layer);
        } else {
            fputs("\"op\":", f);
            put_string(f, e->op);
        }
        fputs(",\"backend\":", f);
        put_string(f, e->backend);
        fprintf(f, ",\"network\":%" PRIu32 "}}", e->network);
    }
    fprintf(f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%" PRIu64 "}}\n",
            p->dropped);
}

PLX_API plx_status plx_runtime_write_trace(plx_runtime *runtime, const char *path) {
    if (!runtime || !path) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  !runtime ? "runtime is NULL" : "trace path is NULL");
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        return plxi_status_create(PLX_IO_ERROR, "cannot write trace '%s': %s", path,
                                  strerror(errno));
    }
    static const struct plxi_profiler empty = {.count = 0};
    struct plxi_profiler *p = profiler_of(runtime);
    if (p) {
        pthread_mutex_lock(&p->lock);
        put_events(f, p);
        pthread_mutex_unlock(&p->lock);
    } else {
        put_events(f, &empty);
    }
    int failed = ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !failed) {
        failed = errno ? errno : EIO;
    }
    if (failed) {
        return plxi_status_create(PLX_IO_ERROR, "cannot write trace '%s': %s", path,
                                  strerror(failed));
    }
    return NULL;
}
