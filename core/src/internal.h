/* Internals shared by the core's translation units (prefix plxi_). */
#ifndef PLEXUS_CORE_INTERNAL_H
#define PLEXUS_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <plexus/plexus.h>

#if defined(__GNUC__) || defined(__clang__)
#define PLXI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PLXI_PRINTF(f, a)
#endif

/* status.c */
plx_status plxi_status_create(plx_status_code code, const char *fmt, ...) PLXI_PRINTF(2, 3);
plx_status plxi_status_vcreate(plx_status_code code, const char *fmt, va_list ap)
    PLXI_PRINTF(2, 0);

/* strutil.c: a string's hash (FNV-1a), for the core's tables by name. */
size_t plxi_hash_str(const char *s);
/* strutil.c: heap strings. Each returns NULL only when out of memory. */
char *plxi_strdup(const char *s);
char *plxi_asprintf(const char *fmt, ...) PLXI_PRINTF(1, 2);
char *plxi_vasprintf(const char *fmt, va_list ap) PLXI_PRINTF(1, 0);
/* A printable, quoted-free copy of untrusted text (a plug-in's id, say):
 * at most max_len bytes are read; bytes outside printable ASCII become \xNN. */
char *plxi_sanitize(const char *s, size_t max_len);

/* A growable array of pointers; the owner decides what the elements are. */
typedef struct plxi_ptr_vec {
    void **items;
    size_t count;
    size_t capacity;
} plxi_ptr_vec;
bool plxi_ptr_vec_push(plxi_ptr_vec *vec, void *item);
void plxi_ptr_vec_release(plxi_ptr_vec *vec);

/* log.c */
typedef struct plxi_logger {
    plx_log_level level;
    plx_log_fn fn;
    void *user_data;
} plxi_logger;
void plxi_logger_init(plxi_logger *logger, int level, plx_log_fn fn, void *user_data);
static inline bool plxi_log_enabled(const plxi_logger *logger, plx_log_level level) {
    return level <= logger->level;
}
void plxi_log(const plxi_logger *logger, plx_log_level level, const char *source,
              const char *fmt, ...) PLXI_PRINTF(4, 5);
void plxi_vlog(const plxi_logger *logger, plx_log_level level, const char *source,
               const char *fmt, va_list ap) PLXI_PRINTF(4, 0);

/* One backend known to a runtime (registry.c). The public view is `info`;
 * `host` is the service table handed to this backend, whose host_data
 * points back at the record, so records never move once created. */
typedef struct plxi_backend_record {
    plx_backend_info info;
    plx_host host;
    const plxi_logger *logger;
    char *log_source;            /* id once known, else the file name */
    void *dl_handle;             /* NULL for static backends and once closed */
    plx_backend_functions functions; /* copy, zero beyond the backend's size */
    plx_backend *instance;
    bool capture_errors;         /* keep error-level messages of the entry */
    char *captured_errors;
    dev_t file_dev;
    ino_t file_ino;
    plx_runtime *runtime;        /* the runtime holding the record */
    /* R-16 (registry.c, plxi_backend_layers): the function table's
     * struct_size as the backend gave it; why the backend runs no layers
     * (heap; NULL when it runs them); and a warning about functions its
     * capabilities need that its struct_size cuts off (heap, or NULL). */
    uint32_t functions_size;
    char *layers_reason;
    char *table_warning;
} plxi_backend_record;

/* host.c */
void plxi_host_init(plxi_backend_record *record);

struct plx_runtime {
    plxi_logger logger;
    plxi_ptr_vec search;     /* plx_search_entry*, strings owned */
    plxi_ptr_vec backends;   /* plxi_backend_record* */
    plxi_ptr_vec rejections; /* plx_rejection*, strings owned */
    plxi_ptr_vec skipped;    /* plx_rejection*, strings owned */
    plxi_ptr_vec notes;      /* char* */
    /* PLEXUS_BACKENDS, split; NULL when not filtering. */
    char **filter_ids;
    bool *filter_seen;
    size_t filter_count;
    /* Per-backend options, copied, and whether a backend claimed each. */
    plx_backend_option *options;
    bool *option_used;
    size_t option_count;
    /* plx_runtime_options.intra_op_threads in decimal; "" for 0 (none). */
    char intra_op_threads[12];
    /* The probe (probe.c): on, its executable, its time limit, the cache
     * file (NULL: none) and its entries (plxi_probe_entry*), loaded at the
     * first probe and written back when it changed. */
    bool probe;
    char *probe_path;
    uint32_t probe_timeout_ms;
    char *probe_cache_file;
    plxi_ptr_vec probe_cache;
    bool probe_cache_loaded, probe_cache_dirty;
    /* plx_runtime_options.host_allocator, when given: what host->alloc and
     * host->free of every backend call (host.c). */
    plx_allocator host_allocator;
    bool has_host_allocator;
    /* Allocators and strategies per backend id (strings owned). */
    plx_backend_allocator *allocators;
    size_t allocator_count;
    plx_backend_memory_strategy *strategies;
    size_t strategy_count;
    /* Loaded networks (plx_loaded_network*), unloaded at destroy. */
    plxi_ptr_vec loaded;
    pthread_mutex_t loaded_lock;
    uint32_t last_network_id;
    /* Profiler (profiler.c). `profiling` is read relaxed on every hot path;
     * `profiler` is created under loaded_lock at the first enable, published
     * before `profiling` is set, and freed at destroy. Counters always on. */
    atomic_bool profiling;
    _Atomic(struct plxi_profiler *) profiler;
    atomic_uint_least64_t networks_loaded;
    atomic_uint_least64_t inferences_run;
    atomic_uint_least64_t inferences_failed;
};

/* profiler.c */
/* true while profiling is enabled: one relaxed atomic load. */
static inline bool plxi_profiling(const plx_runtime *rt) {
    return atomic_load_explicit(&rt->profiling, memory_order_relaxed);
}
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t plxi_now_ns(void);
/* Records one complete event [start_ns, end_ns) on the calling thread.
 * Strings are copied (truncated to 63 bytes); NULL means "". Call only
 * after plxi_profiling returned true. An event that cannot be stored (out
 * of memory) is counted as dropped. Thread-safe. */
void plxi_profile_record(plx_runtime *rt, const char *name, const char *category,
                         const char *op, const char *backend, uint32_t network,
                         uint64_t start_ns, uint64_t end_ns);
/* Records one event a backend reported through its host table on
 * that backend's device track (a trace thread of its own, named
 * "<backend> device"), with `layer` among the event's arguments. `start_ns`
 * is on the host's clock already. Same rules as plxi_profile_record. */
void plxi_profile_record_device(plx_runtime *rt, const char *name, const char *category,
                                const char *layer, const char *backend, uint32_t network,
                                uint64_t start_ns, uint64_t duration_ns);
/* Frees the profiler (runtime destroy). */
void plxi_profiler_destroy(plx_runtime *rt);

#endif /* PLEXUS_CORE_INTERNAL_H */
