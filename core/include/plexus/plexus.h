/* The Plexus application API.
 *
 * A runtime owns a registry of backends found in directories, given as
 * files, or compiled into the application. Runtimes are independent: there
 * is no global state, and two runtimes in one process share nothing but the
 * plug-in files the dynamic linker maps once.
 *
 * Conventions: functions that can fail return a plx_status (NULL on
 * success; otherwise the caller owns it and releases it with
 * plx_status_free). Output parameters come last, are named out_*, are set to
 * NULL/zero on entry and are written only on success. */
#ifndef PLEXUS_PLEXUS_H
#define PLEXUS_PLEXUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/abi_version.h>
#include <plexus/backend.h>
#include <plexus/memory.h>
#include <plexus/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PLX_API __attribute__((visibility("default")))
#else
#define PLX_API
#endif

/* printf-style checking of a function's format (argument f) and arguments
 * (from argument a; 0 for a va_list). */
#if defined(__GNUC__) || defined(__clang__)
#define PLX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PLX_PRINTF(f, a)
#endif

/* ------------------------------------------------------------------------ */
/* Versions and statuses                                                      */
/* ------------------------------------------------------------------------ */

/* The library's version ("0.1.0"). Static storage. Thread-safe. */
PLX_API const char *plx_version_string(void);
/* The backend ABI version the library implements, PLX_MAKE_ABI_VERSION(major, minor). */
PLX_API uint32_t plx_abi_version(void);

/* The code of `status`; PLX_OK for NULL. */
PLX_API plx_status_code plx_status_get_code(plx_status status);
/* The message of `status`; "OK" for NULL. Valid until the status is freed. */
PLX_API const char *plx_status_get_message(plx_status status);
/* Releases a status; NULL is ignored. */
PLX_API void plx_status_free(plx_status status);
/* The name of a code ("INVALID_ARGUMENT"); "UNKNOWN" for values out of range. */
PLX_API const char *plx_status_code_name(plx_status_code code);
/* A status with `code` and the message printf formats from `fmt` and the
 * arguments, for code that reports its own errors in the library's
 * statuses (a model importer). PLX_OK is turned into PLX_INTERNAL: a status
 * object always means failure. Never NULL: when out of memory, a static
 * PLX_OUT_OF_MEMORY status (plx_status_free ignores it). Thread-safe. */
PLX_API plx_status plx_status_create(plx_status_code code, const char *fmt, ...)
    PLX_PRINTF(2, 3);

/* ------------------------------------------------------------------------ */
/* Logging                                                                    */
/* ------------------------------------------------------------------------ */

/* Receives one log line (no trailing newline). `source` is "plexus" for the
 * core or the backend id (or file name, before the id is known) for
 * messages from a backend. May be called from any thread that uses the
 * runtime, including concurrently; the strings are valid only during the
 * call. */
typedef void (*plx_log_fn)(void *user_data, plx_log_level level, const char *source,
                           const char *message);

/* "error", "warn", "info" or "debug" (case-insensitive) to a level; false
 * for anything else. */
PLX_API bool plx_log_level_parse(const char *text, plx_log_level *out_level);
/* The lower-case name of a level. */
PLX_API const char *plx_log_level_name(plx_log_level level);

/* ------------------------------------------------------------------------ */
/* Runtime                                                                    */
/* ------------------------------------------------------------------------ */

/* An option for one backend: applied as key=value when the backend with id
 * `backend_id` is created. Strings are read during plx_runtime_create only. */
typedef struct plx_backend_option {
    const char *backend_id;
    const char *key;
    const char *value;
} plx_backend_option;

/* An application's allocator for the memory the host plans for a backend
 * (externally managed memory, plx_load_options). It wins over the host's
 * default (aligned malloc). Called from the threads that execute networks,
 * possibly concurrently. */
typedef struct plx_allocator {
    void *user_data;
    /* Memory of at least `size` bytes aligned to `alignment` (a power of
     * two), or NULL. */
    void *(*allocate)(void *user_data, size_t size, size_t alignment);
    /* Frees what allocate returned. */
    void (*free)(void *user_data, void *ptr);
    /* What the memory is; the host plans into PLX_MEMORY_SOURCE_MALLOC
     * memory only in this version (it hands it to backends by import). */
    plx_memory_source source;
} plx_allocator;

/* An allocator for backend `backend_id`. The allocator's functions and
 * user_data must stay valid as long as the runtime. */
typedef struct plx_backend_allocator {
    const char *backend_id;
    plx_allocator allocator;
} plx_backend_allocator;

/* The memory strategy for backend `backend_id`: `strategy` (the
 * application's own, valid as long as the runtime) or, when NULL, the
 * built-in strategy called `name` ("none" or "greedy"). Without an entry a
 * backend gets the strategy it offers (get_memory_strategy), else
 * "greedy". */
typedef struct plx_backend_memory_strategy {
    const char *backend_id;
    const char *name;
    const plx_memory_strategy *strategy;
} plx_backend_memory_strategy;

/* Level value meaning "not set": PLEXUS_LOG decides, else PLX_LOG_WARN. */
#define PLX_LOG_LEVEL_DEFAULT (-1)

/* Options for plx_runtime_create. Initialise with plx_runtime_options_init,
 * then set what you need. Every pointer is read during plx_runtime_create
 * only (copied where kept), except log_user_data, which is passed to log_fn
 * for the runtime's lifetime. */
typedef struct plx_runtime_options {
    uint32_t struct_size; /* set by plx_runtime_options_init */

    /* Directories or plug-in files searched first, in this order. */
    const char *const *search_paths;
    size_t search_path_count;

    /* true: PLEXUS_BACKEND_PATH, PLEXUS_BACKENDS and PLEXUS_SKIP_DEFAULT_DIR
     * are not read. */
    bool ignore_environment;
    /* true: the installed backend directory is not searched (so does
     * PLEXUS_SKIP_DEFAULT_DIR=1 unless ignore_environment is set). */
    bool skip_default_dir;

    /* Per-backend options. An option naming a backend id that no plug-in
     * provides is noted (plx_runtime_note) and otherwise ignored; a key the
     * backend does not declare rejects that backend, naming the key. */
    const plx_backend_option *backend_options;
    size_t backend_option_count;

    /* Backends compiled into the application, registered before any plug-in
     * and checked exactly like one (their path is reported as NULL). */
    const plx_backend_entry_fn *static_backends;
    size_t static_backend_count;

    /* Log threshold (a plx_log_level) or PLX_LOG_LEVEL_DEFAULT. */
    int log_level;
    /* Log sink; NULL writes "plexus[source] level: message" lines to stderr. */
    plx_log_fn log_fn;
    void *log_user_data;

    /* Allocators and memory strategies per backend id, for networks loaded
     * with externally managed memory. A backend id given twice: the last
     * entry counts. */
    const plx_backend_allocator *allocators;
    size_t allocator_count;
    const plx_backend_memory_strategy *memory_strategies;
    size_t memory_strategy_count;

    /* Intra-operator threads, for every backend at once: each backend that
     * declares an option `threads` gets threads=N (N in decimal) unless
     * backend_options sets that backend's `threads`, which wins. Backends
     * without the option are not affected. 0: every backend's own default.
     * (Added after memory_strategy_count: a struct_size that ends before it
     * reads as 0.) */
    uint32_t intra_op_threads;

    /* (Added after intra_op_threads: a struct_size that ends before them
     * reads as probe_plugins false.)
     * true: each plug-in file is first loaded in a separate process, the
     * probe (docs/backend-abi.md, "The probe"), which runs its constructors,
     * entry point, check_available, create (with backend_options and
     * intra_op_threads), destroy and destructors; a file whose code
     * crashes, aborts, exits, hangs or writes to stdout there is rejected
     * with what happened and never loaded in this process. Costs a process
     * start per file, once: results are cached per user, keyed by the
     * file's path, device, inode, size, mtime, the host's ABI version and
     * those options. false: plug-ins are loaded in this process only. */
    bool probe_plugins;
    /* The probe executable; NULL: the installed one (plexus-plugin-probe in
     * the library's libexec directory). */
    const char *probe_path;
    /* How long the probe of one file may take, in milliseconds; 0: 10,000.
     * A probe past it is killed and the file rejected as hanging. */
    uint32_t probe_timeout_ms;
    /* Directory of the result cache; NULL: $XDG_CACHE_HOME/plexus, else
     * $HOME/.cache/plexus (none in a setuid or setgid process); "": no
     * cache. */
    const char *probe_cache_dir;

    /* (Added after probe_cache_dir: a struct_size that ends before it
     * reads as NULL.)
     * The allocator behind every backend's host->alloc and host->free
     * (docs/backend-abi.md, R-13): the backends' own state, and tensor
     * memory a backend takes from the host table. NULL: the host's aligned
     * malloc. `allocate` receives the alignment the backend asked for (0
     * replaced by alignof(max_align_t)) and a size of at least 1; `source`
     * is not read. Its functions and user_data must stay valid until
     * plx_runtime_destroy returns; they are called from any thread, also
     * concurrently. `plexus conformance` counts through it (allocations in
     * steady state, memory a backend leaves allocated). */
    const plx_allocator *host_allocator;
} plx_runtime_options;

/* Sets every field to its default: nothing searched but the environment
 * and the default directory, no options, default logging. */
PLX_API void plx_runtime_options_init(plx_runtime_options *options);

typedef struct plx_runtime plx_runtime;

/* Creates a runtime: finds, validates, loads and creates every backend.
 * A broken plug-in never fails this call; it is recorded as a rejection.
 * Errors: PLX_INVALID_ARGUMENT for a NULL or malformed options struct,
 * PLX_OUT_OF_MEMORY. On success *out_runtime owns everything it loaded.
 * Thread-safety: may be called concurrently to create separate runtimes. */
PLX_API plx_status plx_runtime_create(const plx_runtime_options *options,
                                      plx_runtime **out_runtime);

/* Destroys the backends (in reverse order of creation), closes every
 * plug-in and frees the runtime; sets *runtime to NULL. NULL or *runtime
 * NULL is ignored. No other call on the runtime may be in progress. */
PLX_API void plx_runtime_destroy(plx_runtime **runtime);

/* Everything below reads state fixed at creation: safe to call from any
 * number of threads at once. Returned pointers are owned by the runtime and
 * valid until plx_runtime_destroy. Indexes out of range return NULL. */

typedef enum plx_search_source {
    PLX_SEARCH_SOURCE_APPLICATION = 0, /* plx_runtime_options.search_paths */
    PLX_SEARCH_SOURCE_ENVIRONMENT = 1, /* PLEXUS_BACKEND_PATH */
    PLX_SEARCH_SOURCE_DEFAULT = 2      /* the installed backend directory */
} plx_search_source;

/* "application", "environment" or "default". */
PLX_API const char *plx_search_source_name(plx_search_source source);

typedef struct plx_search_entry {
    const char *path;
    plx_search_source source;
    /* Empty when the path was scanned; otherwise why not ("does not exist"). */
    const char *problem;
} plx_search_entry;

PLX_API size_t plx_runtime_search_path_count(const plx_runtime *runtime);
PLX_API const plx_search_entry *plx_runtime_search_path(const plx_runtime *runtime, size_t index);

/* A backend the runtime knows: created and usable, or unavailable. */
typedef struct plx_backend_info {
    const char *id;
    const char *name;
    const char *version;
    const char *path;     /* the plug-in file's resolved path; NULL for static backends */
    uint32_t abi_version; /* what the backend declared, PLX_MAKE_ABI_VERSION */
    bool available;
    const char *reason;   /* why unavailable; NULL when available */
    /* Copied from the backend after creation; empty when unavailable. */
    const plx_capability *capabilities;
    size_t capability_count;
    const plx_option_info *options;
    size_t option_count;
} plx_backend_info;

/* Backends in registration order: static ones, then plug-ins in search
 * order (sorted by file name within a directory). */
PLX_API size_t plx_runtime_backend_count(const plx_runtime *runtime);
PLX_API const plx_backend_info *plx_runtime_backend(const plx_runtime *runtime, size_t index);
/* The backend with `id`, or NULL. */
PLX_API const plx_backend_info *plx_runtime_find_backend(const plx_runtime *runtime,
                                                         const char *id);

/* The capability `key` of a backend, or NULL when it does not report it. */
PLX_API const plx_capability *plx_backend_info_capability(const plx_backend_info *backend,
                                                          const char *key);
/* true only when the capability is present, boolean, and true. */
PLX_API bool plx_backend_info_has_capability(const plx_backend_info *backend, const char *key);
/* The memory sources (plx_memory_source bits) the backend can import, or export. */
PLX_API uint32_t plx_backend_info_import_sources(const plx_backend_info *backend);
PLX_API uint32_t plx_backend_info_export_sources(const plx_backend_info *backend);
/* The alignment in bytes that caller memory must have for the backend to
 * import it (PLX_CAP_IMPORT_ALIGNMENT), or 1 when it reports none (then
 * the element size is enough). Allocate input and output buffers with it
 * for zero copy; a buffer that misses it is copied through a staging
 * buffer (plx_loaded_network_staged_copy_count). */
PLX_API size_t plx_backend_info_import_alignment(const plx_backend_info *backend);

/* Whether the backend runs layers (docs/backend-abi.md, R-16): it is
 * available, declares ABI 1.1 or later, and its function table sets
 * check_layer within its struct_size. One that does not is loaded and
 * listed but never assigned a layer, and its capabilities are not used.
 * `backend` is one this runtime returned (plx_runtime_backend,
 * plx_runtime_find_backend); false for NULL. */
PLX_API bool plx_backend_info_runs_layers(const plx_backend_info *backend);
/* Why the backend runs no layers, one sentence: "it declares ABI 1.0, ...",
 * "its function table ends before the network functions: struct_size is N
 * bytes, check_layer needs at least M ...", "its function table leaves
 * check_layer NULL", or, for a backend whose table allows layers,
 * "it is unavailable on this machine". NULL when it runs layers, or for
 * NULL. Owned by the runtime. */
PLX_API const char *plx_backend_info_no_layers_reason(const plx_backend_info *backend);
/* A warning found at discovery (and logged then, at warn level), NULL when
 * none: the backend's capabilities say it means to use functions that its
 * function table's struct_size cuts off (the host reads nothing beyond
 * struct_size, so a function set there is absent), or that it means to run
 * layers although it runs none. Found only for an available backend (the
 * capabilities are read after create), and only from what it reports: a
 * table cut short whose backend reports no such capability looks like one
 * that leaves those functions out on purpose. Owned by the runtime. */
PLX_API const char *plx_backend_info_table_warning(const plx_backend_info *backend);

/* A file that was looked at and not used, or a backend left out. */
typedef struct plx_rejection {
    const char *path; /* the file; NULL for a static backend */
    const char *id;   /* the backend id when it was known; else NULL */
    const char *reason;
} plx_rejection;

/* Files and backends refused: not loadable, not a Plexus backend, invalid,
 * duplicate, or failed to create. Each plug-in refused was closed. */
PLX_API size_t plx_runtime_rejection_count(const plx_runtime *runtime);
PLX_API const plx_rejection *plx_runtime_rejection(const plx_runtime *runtime, size_t index);

/* Valid backends left out on purpose (PLEXUS_BACKENDS). */
PLX_API size_t plx_runtime_skipped_count(const plx_runtime *runtime);
PLX_API const plx_rejection *plx_runtime_skipped(const plx_runtime *runtime, size_t index);

/* Remarks about the configuration that are not tied to one file: the
 * environment ignored in a setuid process, an id in PLEXUS_BACKENDS that no
 * plug-in provides, options for a backend that is not there. */
PLX_API size_t plx_runtime_note_count(const plx_runtime *runtime);
PLX_API const char *plx_runtime_note(const plx_runtime *runtime, size_t index);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLEXUS_H */
