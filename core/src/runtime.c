/* The runtime: options, search path, and the read-only views of what the
 * registry found. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "loaded_network.h"
#include "registry.h"

#ifndef PLX_DEFAULT_BACKEND_DIR
#error "PLX_DEFAULT_BACKEND_DIR must be defined by the build"
#endif

#define RUNTIME_OPTIONS_V1_SIZE PLX_STRUCT_SIZE_UPTO(plx_runtime_options, log_user_data)
#define RUNTIME_OPTIONS_MEMORY_SIZE \
    PLX_STRUCT_SIZE_UPTO(plx_runtime_options, memory_strategy_count)
#define RUNTIME_OPTIONS_THREADS_SIZE \
    PLX_STRUCT_SIZE_UPTO(plx_runtime_options, intra_op_threads)
#define RUNTIME_OPTIONS_PROBE_SIZE \
    PLX_STRUCT_SIZE_UPTO(plx_runtime_options, probe_cache_dir)
#define RUNTIME_OPTIONS_HOST_ALLOCATOR_SIZE \
    PLX_STRUCT_SIZE_UPTO(plx_runtime_options, host_allocator)

PLX_API const char *plx_version_string(void) {
    return PLX_VERSION_STRING;
}

PLX_API uint32_t plx_abi_version(void) {
    return PLX_ABI_VERSION;
}

PLX_API void plx_runtime_options_init(plx_runtime_options *options) {
    if (!options) {
        return;
    }
    memset(options, 0, sizeof *options);
    options->struct_size = (uint32_t)RUNTIME_OPTIONS_HOST_ALLOCATOR_SIZE;
    options->log_level = PLX_LOG_LEVEL_DEFAULT;
}

PLX_API const char *plx_search_source_name(plx_search_source source) {
    switch (source) {
    case PLX_SEARCH_SOURCE_APPLICATION:
        return "application";
    case PLX_SEARCH_SOURCE_ENVIRONMENT:
        return "environment";
    case PLX_SEARCH_SOURCE_DEFAULT:
        return "default";
    }
    return "unknown";
}

static void free_rejections(plxi_ptr_vec *list) {
    for (size_t i = 0; i < list->count; i++) {
        plx_rejection *r = list->items[i];
        free((char *)r->path);
        free((char *)r->id);
        free((char *)r->reason);
        free(r);
    }
    plxi_ptr_vec_release(list);
}

PLX_API void plx_runtime_destroy(plx_runtime **runtime) {
    if (!runtime || !*runtime) {
        return;
    }
    plx_runtime *rt = *runtime;
    *runtime = NULL;
    plxi_runtime_unload_all(rt);
    plxi_profiler_destroy(rt);
    plxi_ptr_vec_release(&rt->loaded);
    pthread_mutex_destroy(&rt->loaded_lock);
    for (size_t i = rt->backends.count; i-- > 0;) {
        plxi_backend_record_destroy(rt->backends.items[i]);
    }
    plxi_ptr_vec_release(&rt->backends);
    for (size_t i = 0; i < rt->search.count; i++) {
        plx_search_entry *e = rt->search.items[i];
        free((char *)e->path);
        free((char *)e->problem);
        free(e);
    }
    plxi_ptr_vec_release(&rt->search);
    free_rejections(&rt->rejections);
    free_rejections(&rt->skipped);
    for (size_t i = 0; i < rt->notes.count; i++) {
        free(rt->notes.items[i]);
    }
    plxi_ptr_vec_release(&rt->notes);
    plxi_probe_release(rt);
    for (size_t i = 0; i < rt->filter_count; i++) {
        free(rt->filter_ids[i]);
    }
    free(rt->filter_ids);
    free(rt->filter_seen);
    for (size_t i = 0; i < rt->option_count; i++) {
        free((char *)rt->options[i].backend_id);
        free((char *)rt->options[i].key);
        free((char *)rt->options[i].value);
    }
    free(rt->options);
    free(rt->option_used);
    for (size_t i = 0; i < rt->allocator_count; i++) {
        free((char *)rt->allocators[i].backend_id);
    }
    free(rt->allocators);
    for (size_t i = 0; i < rt->strategy_count; i++) {
        free((char *)rt->strategies[i].backend_id);
        free((char *)rt->strategies[i].name);
    }
    free(rt->strategies);
    free(rt);
}

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while creating the runtime");
}

static plx_status add_search(plx_runtime *rt, const char *path, size_t len,
                             plx_search_source source) {
    plx_search_entry *e = calloc(1, sizeof *e);
    char *copy = malloc(len + 1);
    char *problem = plxi_strdup("");
    if (!e || !copy || !problem || !plxi_ptr_vec_push(&rt->search, e)) {
        free(e);
        free(copy);
        free(problem);
        return oom();
    }
    memcpy(copy, path, len);
    copy[len] = '\0';
    e->path = copy;
    e->source = source;
    e->problem = problem;
    return NULL;
}

/* Splits `list` at `sep`, calling add for each non-empty element. */
static plx_status add_env_paths(plx_runtime *rt, const char *list) {
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) {
            plx_status s = add_search(rt, p, len, PLX_SEARCH_SOURCE_ENVIRONMENT);
            if (s) {
                return s;
            }
        }
        p += len + (end ? 1 : 0);
    }
    return NULL;
}

/* PLEXUS_BACKENDS=id1,id2 (spaces around ids are ignored). */
static plx_status parse_filter(plx_runtime *rt, const char *list) {
    size_t n = 1;
    for (const char *p = list; *p; p++) {
        n += *p == ',';
    }
    rt->filter_ids = calloc(n, sizeof *rt->filter_ids);
    rt->filter_seen = calloc(n, sizeof *rt->filter_seen);
    if (!rt->filter_ids || !rt->filter_seen) {
        return oom();
    }
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *a = p, *b = p + len;
        while (a < b && (*a == ' ' || *a == '\t')) {
            a++;
        }
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) {
            b--;
        }
        if (b > a) {
            char *id = malloc((size_t)(b - a) + 1);
            if (!id) {
                return oom();
            }
            memcpy(id, a, (size_t)(b - a));
            id[b - a] = '\0';
            rt->filter_ids[rt->filter_count++] = id;
        }
        p += len + (end ? 1 : 0);
    }
    return NULL;
}

/* getenv that also reports a variable secure_getenv hid (setuid/setgid). */
static const char *read_env(plx_runtime *rt, const char *name, bool *out_failed) {
    const char *value = secure_getenv(name);
    if (!value && getenv(name)) {
        if (!plxi_runtime_note(rt, "%s is set but ignored: the process runs with elevated "
                                   "privileges (setuid/setgid)", name)) {
            *out_failed = true;
        }
    }
    return value;
}

static plx_status copy_options(plx_runtime *rt, const plx_runtime_options *o) {
    if (o->struct_size >= RUNTIME_OPTIONS_THREADS_SIZE && o->intra_op_threads > 0) {
        snprintf(rt->intra_op_threads, sizeof rt->intra_op_threads, "%lu",
                 (unsigned long)o->intra_op_threads);
    }
    if (o->struct_size >= RUNTIME_OPTIONS_HOST_ALLOCATOR_SIZE && o->host_allocator) {
        if (!o->host_allocator->allocate || !o->host_allocator->free) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "host_allocator: allocate and free must be set");
        }
        rt->host_allocator = *o->host_allocator;
        rt->has_host_allocator = true;
    }
    if (o->struct_size >= RUNTIME_OPTIONS_PROBE_SIZE && o->probe_plugins) {
        plx_status s = plxi_probe_configure(rt, o->probe_path, o->probe_timeout_ms,
                                            o->probe_cache_dir);
        if (s) {
            return s;
        }
    }
    if (o->backend_option_count == 0) {
        return NULL;
    }
    if (!o->backend_options) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "backend_option_count is %zu but backend_options is NULL",
                                  o->backend_option_count);
    }
    rt->options = calloc(o->backend_option_count, sizeof *rt->options);
    rt->option_used = calloc(o->backend_option_count, sizeof *rt->option_used);
    if (!rt->options || !rt->option_used) {
        return oom();
    }
    for (size_t i = 0; i < o->backend_option_count; i++) {
        const plx_backend_option *src = &o->backend_options[i];
        if (!src->backend_id || !src->key || !src->value) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "backend option #%zu has a NULL %s", i,
                                      !src->backend_id ? "backend_id"
                                                       : (!src->key ? "key" : "value"));
        }
        plx_backend_option *dst = &rt->options[i];
        dst->backend_id = plxi_strdup(src->backend_id);
        dst->key = plxi_strdup(src->key);
        dst->value = plxi_strdup(src->value);
        rt->option_count = i + 1;
        if (!dst->backend_id || !dst->key || !dst->value) {
            return oom();
        }
    }
    return NULL;
}

/* Allocators and memory strategies per backend (plx_load_options'
 * externally managed memory). */
static plx_status copy_memory_options(plx_runtime *rt, const plx_runtime_options *o) {
    if (o->struct_size < RUNTIME_OPTIONS_MEMORY_SIZE) {
        return NULL; /* built before these options existed */
    }
    if ((o->allocator_count && !o->allocators) ||
        (o->memory_strategy_count && !o->memory_strategies)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s count is non-zero but the array is "
                                  "NULL", o->allocator_count && !o->allocators ? "allocator"
                                                                               : "memory strategy");
    }
    rt->allocators = calloc(o->allocator_count + 1, sizeof *rt->allocators);
    rt->strategies = calloc(o->memory_strategy_count + 1, sizeof *rt->strategies);
    if (!rt->allocators || !rt->strategies) {
        return oom();
    }
    for (size_t i = 0; i < o->allocator_count; i++) {
        const plx_backend_allocator *a = &o->allocators[i];
        if (!a->backend_id || !a->allocator.allocate || !a->allocator.free) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "allocator #%zu: backend_id, allocate and free must be set",
                                      i);
        }
        if (a->allocator.source != PLX_MEMORY_SOURCE_MALLOC) {
            return plxi_status_create(PLX_UNSUPPORTED,
                                      "allocator for backend '%s': memory source %d cannot hold "
                                      "planned tensors (this version plans into malloc memory "
                                      "only)", a->backend_id, (int)a->allocator.source);
        }
        rt->allocators[i] = *a;
        rt->allocators[i].backend_id = plxi_strdup(a->backend_id);
        rt->allocator_count = i + 1;
        if (!rt->allocators[i].backend_id) {
            return oom();
        }
    }
    for (size_t i = 0; i < o->memory_strategy_count; i++) {
        const plx_backend_memory_strategy *m = &o->memory_strategies[i];
        if (!m->backend_id || !m->name) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "memory strategy #%zu: backend_id and name must be set", i);
        }
        if (m->strategy && !m->strategy->place) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "memory strategy '%s' for backend '%s' has no place "
                                      "function", m->name, m->backend_id);
        }
        if (!m->strategy && strcmp(m->name, "none") != 0 && strcmp(m->name, "greedy") != 0) {
            return plxi_status_create(PLX_NOT_FOUND,
                                      "memory strategy '%s' for backend '%s' is not built in "
                                      "(none, greedy) and no strategy object is given",
                                      m->name, m->backend_id);
        }
        rt->strategies[i].strategy = m->strategy;
        rt->strategies[i].backend_id = plxi_strdup(m->backend_id);
        rt->strategies[i].name = plxi_strdup(m->name);
        rt->strategy_count = i + 1;
        if (!rt->strategies[i].backend_id || !rt->strategies[i].name) {
            return oom();
        }
    }
    return NULL;
}

static plx_status build_search_path(plx_runtime *rt, const plx_runtime_options *o) {
    plx_status s = NULL;
    bool skip_default_dir = o->skip_default_dir;
    if (o->search_path_count && !o->search_paths) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "search_path_count is %zu but search_paths is NULL",
                                  o->search_path_count);
    }
    for (size_t i = 0; !s && i < o->search_path_count; i++) {
        const char *p = o->search_paths[i];
        if (!p || !*p) {
            return plxi_status_create(PLX_INVALID_ARGUMENT, "search path #%zu is %s", i,
                                      p ? "empty" : "NULL");
        }
        s = add_search(rt, p, strlen(p), PLX_SEARCH_SOURCE_APPLICATION);
    }
    if (!s && !o->ignore_environment) {
        bool failed = false;
        const char *env_path = read_env(rt, "PLEXUS_BACKEND_PATH", &failed);
        const char *env_filter = read_env(rt, "PLEXUS_BACKENDS", &failed);
        const char *env_skip = read_env(rt, "PLEXUS_SKIP_DEFAULT_DIR", &failed);
        if (failed) {
            return oom();
        }
        if (env_path) {
            s = add_env_paths(rt, env_path);
        }
        if (!s && env_filter && *env_filter) {
            s = parse_filter(rt, env_filter);
            if (!s && rt->filter_count == 0) {
                /* ",,," or blanks: a mistake (unset variables joined), not
                 * a wish to load nothing */
                char *shown = plxi_sanitize(env_filter, 32);
                free(rt->filter_ids);
                free(rt->filter_seen);
                rt->filter_ids = NULL;
                rt->filter_seen = NULL;
                if (!shown || !plxi_runtime_note(rt, "PLEXUS_BACKENDS='%s%s' names no backend: "
                                                     "ignored, every backend is loaded",
                                                 shown, strlen(env_filter) > 32 ? "..." : "")) {
                    s = oom();
                }
                free(shown);
            }
        }
        /* A build tree's `meson devenv` sets it, so that what is installed
         * beside the build is not loaded as well (every backend twice). */
        if (!s && env_skip && strcmp(env_skip, "1") == 0) {
            skip_default_dir = true;
        } else if (!s && env_skip && *env_skip && strcmp(env_skip, "0") != 0 &&
                   !plxi_runtime_note(rt, "PLEXUS_SKIP_DEFAULT_DIR is '%s', neither 0 nor 1: "
                                          "ignored", env_skip)) {
            s = oom();
        }
    }
    if (!s && !skip_default_dir) {
        s = add_search(rt, PLX_DEFAULT_BACKEND_DIR, strlen(PLX_DEFAULT_BACKEND_DIR),
                       PLX_SEARCH_SOURCE_DEFAULT);
    }
    return s;
}

static plx_status load_everything(plx_runtime *rt, const plx_runtime_options *o) {
    plx_status s = NULL;
    if (o->static_backend_count && !o->static_backends) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "static_backend_count is %zu but static_backends is NULL",
                                  o->static_backend_count);
    }
    for (size_t i = 0; !s && i < o->static_backend_count; i++) {
        s = plxi_registry_load_static(rt, o->static_backends[i]);
    }
    for (size_t i = 0; !s && i < rt->search.count; i++) {
        s = plxi_registry_scan(rt, rt->search.items[i]);
    }
    if (!s) {
        s = plxi_probe_cache_save(rt);
    }
    for (size_t i = 0; !s && i < rt->filter_count; i++) {
        if (!rt->filter_seen[i] &&
            !plxi_runtime_note(rt, "PLEXUS_BACKENDS names '%s', but no plug-in provides it",
                               rt->filter_ids[i])) {
            s = oom();
        }
    }
    for (size_t i = 0; !s && i < rt->option_count; i++) {
        if (!rt->option_used[i] &&
            !plxi_runtime_note(rt, "option %s=%s is for backend '%s', which is not loaded",
                               rt->options[i].key, rt->options[i].value,
                               rt->options[i].backend_id)) {
            s = oom();
        }
    }
    return s;
}

PLX_API plx_status plx_runtime_create(const plx_runtime_options *options,
                                      plx_runtime **out_runtime) {
    if (!out_runtime) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "out_runtime is NULL");
    }
    *out_runtime = NULL;
    if (!options) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "options is NULL (initialise with plx_runtime_options_init)");
    }
    if (options->struct_size < RUNTIME_OPTIONS_V1_SIZE) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "options.struct_size is %u, expected at least %zu "
                                  "(initialise with plx_runtime_options_init)",
                                  options->struct_size, (size_t)RUNTIME_OPTIONS_V1_SIZE);
    }
    if (options->log_level != PLX_LOG_LEVEL_DEFAULT &&
        (options->log_level < PLX_LOG_ERROR || options->log_level > PLX_LOG_DEBUG)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "options.log_level %d is not a level",
                                  options->log_level);
    }
    plx_runtime *rt = calloc(1, sizeof *rt);
    if (!rt) {
        return oom();
    }
    pthread_mutex_init(&rt->loaded_lock, NULL);
    plxi_logger_init(&rt->logger, options->log_level, options->log_fn, options->log_user_data);
    plx_status s = copy_options(rt, options);
    if (!s) {
        s = copy_memory_options(rt, options);
    }
    if (!s) {
        s = build_search_path(rt, options);
    }
    if (!s) {
        s = load_everything(rt, options);
    }
    if (s) {
        plx_runtime_destroy(&rt);
        return s;
    }
    *out_runtime = rt;
    return NULL;
}

#define VIEW(count_fn, item_fn, vec, type)                                            \
    PLX_API size_t count_fn(const plx_runtime *runtime) {                             \
        return runtime ? runtime->vec.count : 0;                                      \
    }                                                                                 \
    PLX_API type item_fn(const plx_runtime *runtime, size_t index) {                  \
        return runtime && index < runtime->vec.count ? runtime->vec.items[index] : NULL; \
    }

VIEW(plx_runtime_search_path_count, plx_runtime_search_path, search, const plx_search_entry *)
VIEW(plx_runtime_rejection_count, plx_runtime_rejection, rejections, const plx_rejection *)
VIEW(plx_runtime_skipped_count, plx_runtime_skipped, skipped, const plx_rejection *)
VIEW(plx_runtime_note_count, plx_runtime_note, notes, const char *)

PLX_API size_t plx_runtime_backend_count(const plx_runtime *runtime) {
    return runtime ? runtime->backends.count : 0;
}

PLX_API const plx_backend_info *plx_runtime_backend(const plx_runtime *runtime, size_t index) {
    if (!runtime || index >= runtime->backends.count) {
        return NULL;
    }
    return &((const plxi_backend_record *)runtime->backends.items[index])->info;
}

PLX_API const plx_backend_info *plx_runtime_find_backend(const plx_runtime *runtime,
                                                         const char *id) {
    for (size_t i = 0; id && i < plx_runtime_backend_count(runtime); i++) {
        const plx_backend_info *b = plx_runtime_backend(runtime, i);
        if (strcmp(b->id, id) == 0) {
            return b;
        }
    }
    return NULL;
}

PLX_API const plx_capability *plx_backend_info_capability(const plx_backend_info *backend,
                                                          const char *key) {
    for (size_t i = 0; backend && key && i < backend->capability_count; i++) {
        if (strcmp(backend->capabilities[i].key, key) == 0) {
            return &backend->capabilities[i];
        }
    }
    return NULL;
}

PLX_API bool plx_backend_info_has_capability(const plx_backend_info *backend, const char *key) {
    const plx_capability *c = plx_backend_info_capability(backend, key);
    return c && c->type == PLX_VALUE_BOOL && c->bool_value;
}

static uint32_t sources(const plx_backend_info *b, const char *malloc_key, const char *dma_key,
                        const char *protected_key) {
    uint32_t mask = 0;
    mask |= plx_backend_info_has_capability(b, malloc_key) ? PLX_MEMORY_SOURCE_MALLOC : 0u;
    mask |= plx_backend_info_has_capability(b, dma_key) ? PLX_MEMORY_SOURCE_DMA_BUF : 0u;
    mask |= plx_backend_info_has_capability(b, protected_key) ? PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED
                                                              : 0u;
    return mask;
}

PLX_API uint32_t plx_backend_info_import_sources(const plx_backend_info *backend) {
    return sources(backend, PLX_CAP_IMPORT_MALLOC, PLX_CAP_IMPORT_DMA_BUF,
                   PLX_CAP_IMPORT_DMA_BUF_PROTECTED);
}

PLX_API size_t plx_backend_info_import_alignment(const plx_backend_info *backend) {
    const plx_capability *c = plx_backend_info_capability(backend, PLX_CAP_IMPORT_ALIGNMENT);
    /* The registry checked it: an integer power of two from 1 to 4096. */
    return c && c->type == PLX_VALUE_INT ? (size_t)c->int_value : 1;
}

PLX_API uint32_t plx_backend_info_export_sources(const plx_backend_info *backend) {
    return sources(backend, PLX_CAP_EXPORT_MALLOC, PLX_CAP_EXPORT_DMA_BUF,
                   PLX_CAP_EXPORT_DMA_BUF_PROTECTED);
}
