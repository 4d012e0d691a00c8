/* Discovery and validation of backends (docs/backend-abi.md, R-1 to R-11).
 *
 * Every file or entry point is a candidate. A candidate that fails a check
 * becomes a rejection {path, id, reason} and is closed; the scan goes on.
 * Only out-of-memory stops the scan (the caller then fails the runtime). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_check.h"
#include "internal.h"
#include "registry.h"

#define MAX_ID_LEN 63
#define MAX_NAME_LEN 255
#define MAX_VERSION_LEN 255
#define MAX_OPTIONS 1024
#define MAX_CAPABILITIES 4096
#define MAX_KEY_LEN 255

/* The smallest tables an ABI 1.0 backend may give. */
#define DESCRIPTOR_V1_0_SIZE PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count)
#define FUNCTIONS_V1_0_SIZE PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities)
/* struct_size and abi_version: the part of a descriptor every major version keeps. */
#define DESCRIPTOR_HEADER_SIZE PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, abi_version)

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while loading backends");
}

bool plxi_runtime_note(plx_runtime *rt, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *note = plxi_vasprintf(fmt, ap);
    va_end(ap);
    if (!note || !plxi_ptr_vec_push(&rt->notes, note)) {
        free(note);
        return false;
    }
    plxi_log(&rt->logger, PLX_LOG_WARN, "plexus", "%s", note);
    return true;
}

/* Records a rejection (or a skip, when `list` is rt->skipped). */
static plx_status add_rejection(plx_runtime *rt, plxi_ptr_vec *list, const char *path,
                                const char *id, const char *fmt, ...) PLXI_PRINTF(5, 6);
static plx_status add_rejection(plx_runtime *rt, plxi_ptr_vec *list, const char *path,
                                const char *id, const char *fmt, ...) {
    plx_rejection *r = calloc(1, sizeof *r);
    if (!r) {
        return oom();
    }
    va_list ap;
    va_start(ap, fmt);
    char *reason = plxi_vasprintf(fmt, ap);
    va_end(ap);
    r->reason = reason;
    r->path = path ? plxi_strdup(path) : NULL;
    r->id = id ? plxi_strdup(id) : NULL;
    if (!reason || (path && !r->path) || (id && !r->id) || !plxi_ptr_vec_push(list, r)) {
        free((char *)r->path);
        free((char *)r->id);
        free(reason);
        free(r);
        return oom();
    }
    plxi_log(&rt->logger, list == &rt->skipped ? PLX_LOG_INFO : PLX_LOG_WARN, "plexus",
             "%s %s: %s", list == &rt->skipped ? "skipped" : "rejected",
             path ? path : (id ? id : "static backend"), reason);
    return NULL;
}

static bool valid_name_part(const char *s, size_t len) {
    if (len == 0 || s[0] < 'a' || s[0] > 'z') {
        return false;
    }
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
            return false;
        }
    }
    return true;
}

/* [a-z][a-z0-9_]*, 1 to 63 characters. */
static bool valid_id(const char *id) {
    size_t len = strnlen(id, MAX_ID_LEN + 1);
    return len <= MAX_ID_LEN && valid_name_part(id, len);
}

/* MAJOR.MINOR.PATCH with an optional -prerelease and +build, as semver.org. */
static bool valid_semver(const char *v) {
    if (strnlen(v, MAX_VERSION_LEN + 1) > MAX_VERSION_LEN) {
        return false;
    }
    const char *p = v;
    for (int part = 0; part < 3; part++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        if (*p == '0' && p[1] >= '0' && p[1] <= '9') {
            return false; /* no leading zeros */
        }
        while (*p >= '0' && *p <= '9') {
            p++;
        }
        if (part < 2 && *p++ != '.') {
            return false;
        }
    }
    for (char sep = '-'; sep; sep = sep == '-' ? '+' : 0) {
        if (*p != sep) {
            continue;
        }
        p++;
        bool empty_ident = true;
        for (; *p && *p != '+'; p++) {
            char c = *p;
            if (c == '.') {
                if (empty_ident) {
                    return false;
                }
                empty_ident = true;
            } else if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z') || c == '-') {
                empty_ident = false;
            } else {
                return false;
            }
        }
        if (empty_ident) {
            return false;
        }
    }
    return *p == '\0';
}

/* Standard capability keys: those of ABI 1.0 are booleans,
 * import_alignment (1.2) an integer. */
static const struct {
    const char *key;
    plx_value_type type;
} standard_caps[] = {
    {PLX_CAP_ASYNC_EXECUTION, PLX_VALUE_BOOL},
    {PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_VALUE_BOOL},
    {PLX_CAP_PREIMPORT_IO_TENSORS, PLX_VALUE_BOOL},
    {PLX_CAP_PROTECTED_CONTENT_ALLOCATION, PLX_VALUE_BOOL},
    {PLX_CAP_CONSTANT_TENSORS_AS_INPUTS, PLX_VALUE_BOOL},
    {PLX_CAP_FP16, PLX_VALUE_BOOL},
    {PLX_CAP_IMPORT_MALLOC, PLX_VALUE_BOOL},
    {PLX_CAP_IMPORT_DMA_BUF, PLX_VALUE_BOOL},
    {PLX_CAP_IMPORT_DMA_BUF_PROTECTED, PLX_VALUE_BOOL},
    {PLX_CAP_EXPORT_MALLOC, PLX_VALUE_BOOL},
    {PLX_CAP_EXPORT_DMA_BUF, PLX_VALUE_BOOL},
    {PLX_CAP_EXPORT_DMA_BUF_PROTECTED, PLX_VALUE_BOOL},
    {PLX_CAP_IMPORT_ALIGNMENT, PLX_VALUE_INT},
    {PLX_CAP_QUEUED_EXECUTION, PLX_VALUE_BOOL},
    {PLX_CAP_FENCE_DOMAIN, PLX_VALUE_STRING},
    {PLX_CAP_ALLOCATES_PLANNED_MEMORY, PLX_VALUE_BOOL},
    {PLX_CAP_PLANNED_ALIGNMENT, PLX_VALUE_INT},
    {PLX_CAP_IMPORT_MEMORY_KINDS, PLX_VALUE_STRING},
};

/* The longest fence_domain. */
#define MAX_FENCE_DOMAIN_LEN 127

/* The longest kind in import_memory_kinds. */
#define MAX_MEMORY_KIND_LEN 63

/* Is `list` a valid import_memory_kinds value: kinds of 1 to 63 bytes of
 * [a-z0-9_.], separated by single commas? */
static bool valid_kind_list(const char *list) {
    size_t len = 0;
    for (const char *p = list;; p++) {
        if (*p == ',' || *p == '\0') {
            if (len == 0 || len > MAX_MEMORY_KIND_LEN) {
                return false;
            }
            if (*p == '\0') {
                return true;
            }
            len = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                   *p == '.') {
            len++;
        } else {
            return false;
        }
    }
}

/* The standard key's entry, or NULL for any other key. */
static int standard_cap(const char *key) {
    for (size_t i = 0; i < sizeof standard_caps / sizeof standard_caps[0]; i++) {
        if (strcmp(key, standard_caps[i].key) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* vendor.name, each part [a-z][a-z0-9_]*. */
static bool is_vendor_cap(const char *key, size_t len) {
    const char *dot = memchr(key, '.', len);
    if (!dot) {
        return false;
    }
    size_t head = (size_t)(dot - key);
    return valid_name_part(key, head) && valid_name_part(dot + 1, len - head - 1);
}

static void free_capabilities(plx_capability *caps, size_t count) {
    for (size_t i = 0; caps && i < count; i++) {
        free((char *)caps[i].key);
        free((char *)caps[i].string_value);
    }
    free(caps);
}

static void free_options(plx_option_info *opts, size_t count) {
    for (size_t i = 0; opts && i < count; i++) {
        free((char *)opts[i].key);
        free((char *)opts[i].description);
        free((char *)opts[i].default_value);
    }
    free(opts);
}

/* Tells the probe (registry.h) which of the plug-in's code runs next. */
static void phase(const char *what) {
    if (plxi_probe_phase) {
        plxi_probe_phase(what);
    }
}

void plxi_backend_record_destroy(plxi_backend_record *record) {
    if (!record) {
        return;
    }
    if (record->instance && record->functions.destroy) {
        phase("destroy");
        record->functions.destroy(record->instance);
    }
    if (record->dl_handle) {
        phase("its destructors (dlclose)");
        dlclose(record->dl_handle);
    }
    free((char *)record->info.id);
    free((char *)record->info.name);
    free((char *)record->info.version);
    free((char *)record->info.path);
    free((char *)record->info.reason);
    free_capabilities((plx_capability *)record->info.capabilities, record->info.capability_count);
    free_options((plx_option_info *)record->info.options, record->info.option_count);
    free(record->log_source);
    free(record->captured_errors);
    free(record->layers_reason);
    free(record->table_warning);
    free(record);
}

/* Rejects the candidate: records the reason, and closes what it opened.
 * Returns NULL, or an out-of-memory status. */
static plx_status reject(plx_runtime *rt, plxi_backend_record *rec, const char *fmt, ...)
    PLXI_PRINTF(3, 4);
static plx_status reject(plx_runtime *rt, plxi_backend_record *rec, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *reason = plxi_vasprintf(fmt, ap);
    va_end(ap);
    plx_status s = reason ? add_rejection(rt, &rt->rejections, rec->info.path, rec->info.id,
                                          "%s", reason)
                          : oom();
    free(reason);
    plxi_backend_record_destroy(rec);
    return s;
}

/* What the checks below return when an allocation of their own fails: not
 * a problem of the plug-in (never freed; reject_with stops the scan). */
static char oom_problem[] = "out of memory";

/* Rejects the candidate with `problem` (a heap string, freed), or stops
 * the scan when it is oom_problem. */
static plx_status reject_with(plx_runtime *rt, plxi_backend_record *rec, char *problem) {
    if (problem == oom_problem) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    plx_status s = reject(rt, rec, "%s", problem);
    free(problem);
    return s;
}

/* The candidate ran out of memory (its create said so, or the dynamic
 * loader did): not a broken plug-in but the process's state, so the scan
 * stops with PLX_OUT_OF_MEMORY naming the file, as for the host's own
 * allocations. Closes what it opened. */
static plx_status out_of_memory_in(plxi_backend_record *rec, const char *step,
                                   const char *detail) {
    plx_status s = plxi_status_create(PLX_OUT_OF_MEMORY,
                                      "out of memory while loading backends: %s of %s: %s", step,
                                      rec->info.path ? rec->info.path
                                                     : (rec->info.id ? rec->info.id : "a static "
                                                                                      "backend"),
                                      detail);
    plxi_backend_record_destroy(rec);
    return s;
}

/* The candidate's function `step` returned status s (freed here): it ran
 * out of memory, or it is rejected with "STEP failed: MESSAGE". */
static plx_status fail_in(plx_runtime *rt, plxi_backend_record *rec, const char *step,
                          plx_status s) {
    plx_status r = plx_status_get_code(s) == PLX_OUT_OF_MEMORY
                       ? out_of_memory_in(rec, step, plx_status_get_message(s))
                       : reject(rt, rec, "%s failed: %s", step, plx_status_get_message(s));
    plx_status_free(s);
    return r;
}

/* Whether the dynamic loader's message is glibc's for a failed allocation
 * ("cannot allocate memory", as strerror(ENOMEM) words it, in its several
 * forms; some of its messages name no errno, and dlopen's errno then tells). */
static bool loader_out_of_memory(const char *err) {
    return err && (strcasestr(err, "cannot allocate memory") || strstr(err, "out of memory"));
}

/* Copies and checks the descriptor's option list. NULL reason: fine. */
static char *copy_options(plxi_backend_record *rec, const plx_backend_descriptor *d) {
    if (d->option_count == 0) {
        return NULL;
    }
    if (!d->options) {
        return plxi_asprintf("descriptor declares %zu options but no option list",
                             d->option_count);
    }
    if (d->option_count > MAX_OPTIONS) {
        return plxi_asprintf("descriptor declares %zu options (at most %d)", d->option_count,
                             MAX_OPTIONS);
    }
    plx_option_info *opts = calloc(d->option_count, sizeof *opts);
    if (!opts) {
        return NULL; /* caught by the caller's out-of-memory check */
    }
    rec->info.options = opts;
    for (size_t i = 0; i < d->option_count; i++) {
        const plx_option_info *o = &d->options[i];
        if (!o->key || !valid_name_part(o->key, strnlen(o->key, MAX_KEY_LEN + 1)) ||
            strnlen(o->key, MAX_KEY_LEN + 1) > MAX_KEY_LEN) {
            char *shown = o->key ? plxi_sanitize(o->key, MAX_KEY_LEN) : NULL;
            char *r = plxi_asprintf("invalid option #%zu '%s': keys must match [a-z][a-z0-9_]*",
                                    i, shown ? shown : "(null)");
            free(shown);
            return r;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(opts[j].key, o->key) == 0) {
                return plxi_asprintf("option '%s' is declared twice", o->key);
            }
        }
        opts[i].key = plxi_strdup(o->key);
        opts[i].description = plxi_strdup(o->description ? o->description : "");
        opts[i].default_value = o->default_value ? plxi_strdup(o->default_value) : NULL;
        rec->info.option_count = i + 1;
        if (!opts[i].key || !opts[i].description || (o->default_value && !opts[i].default_value)) {
            return oom_problem;
        }
    }
    return NULL;
}

/* " (it lies beyond the function table's struct_size, N bytes)" when the
 * function at `offset` does (the host sees it as NULL, whatever the backend
 * set there), else "". */
static const char *beyond_table(const plxi_backend_record *rec, size_t offset, char *buf,
                                size_t size) {
    if (offset + sizeof(void (*)(void)) <= rec->functions_size) {
        return "";
    }
    snprintf(buf, size, " (it lies beyond the function table's struct_size, %u bytes)",
             (unsigned)rec->functions_size);
    return buf;
}

/* whether the backend runs layers, decided once, here, from what it
 * declared: its ABI minor and its function table as far as its struct_size
 * goes (the host reads no byte beyond it). Sets rec->layers_reason to why
 * not, NULL when it runs them. False when out of memory. */
static bool decide_layers(plxi_backend_record *rec, unsigned minor) {
    const size_t need = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, check_layer);
    if (minor < 1) {
        rec->layers_reason = plxi_strdup("it declares ABI 1.0, which has no network functions "
                                         "(declare PLX_ABI_VERSION to run layers)");
    } else if (rec->functions_size < need) {
        rec->layers_reason = plxi_asprintf(
            "its function table ends before the network functions: struct_size is %u bytes, "
            "check_layer needs at least %zu (set struct_size to sizeof(plx_backend_functions))",
            (unsigned)rec->functions_size, need);
    } else if (!rec->functions.check_layer) {
        rec->layers_reason = plxi_strdup("its function table leaves check_layer NULL");
    } else {
        return true;
    }
    return rec->layers_reason != NULL;
}

/* A capability that only a backend running layers acts on: every standard
 * one claimed (a boolean true, or an integer or string given). */
static bool claims_layer_capability(const plx_capability *c) {
    return standard_cap(c->key) >= 0 && (c->type != PLX_VALUE_BOOL || c->bool_value);
}

/* The trap of a function table cut short: the backend reports a
 * capability that only a backend running layers acts on, yet runs none
 * (most often a struct_size that ends before check_layer, which hides the
 * network functions the backend sets). Sets rec->table_warning (NULL:
 * nothing found). The host cannot see what a table sets beyond its
 * struct_size, so the capabilities are the only evidence; the functions a
 * capability needs after the network group (queued execution, the
 * backend allocator, dma-buf export) are checked where the capability is,
 * and their rejections say when the function lies beyond struct_size.
 * Within the group nothing can be cut alone: a table that ends inside it
 * lacks execute_workload and is rejected. False when out of memory. */
static bool find_table_warning(plxi_backend_record *rec) {
    for (size_t i = 0; rec->layers_reason && i < rec->info.capability_count; i++) {
        const plx_capability *c = &rec->info.capabilities[i];
        if (claims_layer_capability(c)) {
            rec->table_warning = plxi_asprintf("reports capability '%s', which only a backend "
                                               "that runs layers uses, but it runs none: %s",
                                               c->key, rec->layers_reason);
            return rec->table_warning != NULL;
        }
    }
    return true;
}

/* a backend that reports queued_execution provides the whole queued
 * group (a backend built for an older minor has none of it). NULL: fine. */
static char *check_queued(const plxi_backend_record *rec) {
    if (!plx_backend_info_has_capability(&rec->info, PLX_CAP_QUEUED_EXECUTION)) {
        return NULL;
    }
    static const struct {
        size_t offset;
        const char *name;
    } required[] = {
#define REQ(f) {offsetof(plx_backend_functions, f), #f}
        REQ(create_queue), REQ(destroy_queue), REQ(enqueue_workload), REQ(queue_signal),
        REQ(fence_wait),   REQ(fence_query),   REQ(destroy_fence),
#undef REQ
    };
    if (rec->layers_reason) {
        return plxi_asprintf("capability '%s' but the backend runs no layers: %s",
                             PLX_CAP_QUEUED_EXECUTION, rec->layers_reason);
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        void (*fn)(void);
        memcpy(&fn, (const char *)&rec->functions + required[i].offset, sizeof fn);
        if (!fn) {
            char buf[96];
            return plxi_asprintf("required function '%s' is NULL%s (the backend reports %s; "
                                 "ABI 1.4 or later)",
                                 required[i].name,
                                 beyond_table(rec, required[i].offset, buf, sizeof buf),
                                 PLX_CAP_QUEUED_EXECUTION);
        }
    }
    return NULL;
}

/* Copies and checks the capability list. NULL: fine. */
static char *copy_capabilities(plxi_backend_record *rec, const plx_capability *caps,
                               size_t count) {
    if (count == 0) {
        return NULL;
    }
    if (!caps) {
        return plxi_asprintf("invalid capability list: %zu entries but no array", count);
    }
    if (count > MAX_CAPABILITIES) {
        return plxi_asprintf("invalid capability list: %zu entries (at most %d)", count,
                             MAX_CAPABILITIES);
    }
    plx_capability *copy = calloc(count, sizeof *copy);
    if (!copy) {
        return oom_problem;
    }
    rec->info.capabilities = copy;
    for (size_t i = 0; i < count; i++) {
        const plx_capability *c = &caps[i];
        if (!c->key) {
            return plxi_asprintf("invalid capability #%zu: no key", i);
        }
        size_t len = strnlen(c->key, MAX_KEY_LEN + 1);
        char *shown = plxi_sanitize(c->key, MAX_KEY_LEN);
        if (!shown) {
            return oom_problem;
        }
        char *problem = NULL;
        bool invalid = true; /* until no check below finds a problem */
        int std_index = len <= MAX_KEY_LEN ? standard_cap(c->key) : -1;
        bool standard = std_index >= 0;
        if (!standard && (len > MAX_KEY_LEN || !is_vendor_cap(c->key, len))) {
            problem = plxi_asprintf("invalid capability '%s': neither a standard key of ABI "
                                    "%d.%d nor a namespaced vendor key (vendor.name)",
                                    shown, PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR);
        } else if (c->type != PLX_VALUE_BOOL && c->type != PLX_VALUE_INT &&
                   c->type != PLX_VALUE_STRING) {
            problem = plxi_asprintf("invalid capability '%s': unknown value type %d", shown,
                                    (int)c->type);
        } else if (standard && c->type != standard_caps[std_index].type) {
            plx_value_type want = standard_caps[std_index].type;
            problem = plxi_asprintf("invalid capability '%s': must be %s", shown,
                                    want == PLX_VALUE_BOOL  ? "a boolean"
                                    : want == PLX_VALUE_INT ? "an integer"
                                                            : "a string");
        } else if (standard && (strcmp(c->key, PLX_CAP_IMPORT_ALIGNMENT) == 0 ||
                                strcmp(c->key, PLX_CAP_PLANNED_ALIGNMENT) == 0) &&
                   (c->int_value < 1 || c->int_value > 4096 ||
                    (c->int_value & (c->int_value - 1)) != 0)) {
            problem = plxi_asprintf("invalid capability '%s': %" PRId64
                                    " is not a power of two from 1 to 4096",
                                    shown, c->int_value);
        } else if (c->type == PLX_VALUE_STRING && !c->string_value) {
            problem = plxi_asprintf("invalid capability '%s': string value is NULL", shown);
        } else if (standard && strcmp(c->key, PLX_CAP_FENCE_DOMAIN) == 0 &&
                   (c->string_value[0] == '\0' ||
                    strnlen(c->string_value, MAX_FENCE_DOMAIN_LEN + 1) > MAX_FENCE_DOMAIN_LEN)) {
            problem = plxi_asprintf("invalid capability '%s': must be 1 to %d bytes", shown,
                                    MAX_FENCE_DOMAIN_LEN);
        } else if (standard && strcmp(c->key, PLX_CAP_IMPORT_MEMORY_KINDS) == 0 &&
                   !valid_kind_list(c->string_value)) {
            problem = plxi_asprintf("invalid capability '%s': must be memory kinds of 1 to %d "
                                    "bytes of [a-z0-9_.], separated by commas",
                                    shown, MAX_MEMORY_KIND_LEN);
        } else {
            invalid = false;
        }
        for (size_t j = 0; !invalid && j < i; j++) {
            if (strcmp(copy[j].key, c->key) == 0) {
                problem = plxi_asprintf("invalid capability '%s': reported twice", shown);
                invalid = true;
            }
        }
        free(shown);
        if (invalid) {
            return problem ? problem : oom_problem;
        }
        copy[i].key = plxi_strdup(c->key);
        copy[i].type = c->type;
        copy[i].bool_value = c->type == PLX_VALUE_BOOL && c->bool_value;
        copy[i].int_value = c->type == PLX_VALUE_INT ? c->int_value : 0;
        if (c->type == PLX_VALUE_STRING) {
            copy[i].string_value = plxi_strdup(c->string_value);
        }
        rec->info.capability_count = i + 1;
        if (!copy[i].key || (c->type == PLX_VALUE_STRING && !copy[i].string_value)) {
            return oom_problem;
        }
    }
    return NULL;
}

static bool filter_allows(plx_runtime *rt, const char *id) {
    if (!rt->filter_ids) {
        return true;
    }
    for (size_t i = 0; i < rt->filter_count; i++) {
        if (strcmp(rt->filter_ids[i], id) == 0) {
            rt->filter_seen[i] = true;
            return true;
        }
    }
    return false;
}

/* Whether the runtime's intra_op_threads goes to the backend: it declares
 * `threads` and the application's options do not set it. */
static bool takes_intra_op_threads(const plx_runtime *rt, const plxi_backend_record *rec) {
    if (!rt->intra_op_threads[0]) {
        return false;
    }
    bool declared = false;
    for (size_t j = 0; j < rec->info.option_count; j++) {
        declared = declared || strcmp(rec->info.options[j].key, "threads") == 0;
    }
    for (size_t i = 0; declared && i < rt->option_count; i++) {
        if (strcmp(rt->options[i].backend_id, rec->info.id) == 0 &&
            strcmp(rt->options[i].key, "threads") == 0) {
            return false;
        }
    }
    return declared;
}

/* The options the application gave for `id`, checked against the declared
 * keys, and threads=N from plx_runtime_options.intra_op_threads when
 * the backend takes it. Writes a heap array of plx_option (pointing into
 * rt) or a reason. */
static char *collect_options(plx_runtime *rt, plxi_backend_record *rec, plx_option **out,
                             size_t *out_count) {
    *out = NULL;
    *out_count = 0;
    bool threads = takes_intra_op_threads(rt, rec);
    size_t n = threads;
    for (size_t i = 0; i < rt->option_count; i++) {
        n += strcmp(rt->options[i].backend_id, rec->info.id) == 0;
    }
    if (n == 0) {
        return NULL;
    }
    plx_option *opts = calloc(n, sizeof *opts);
    if (!opts) {
        return oom_problem;
    }
    size_t k = 0;
    for (size_t i = 0; i < rt->option_count; i++) {
        const plx_backend_option *o = &rt->options[i];
        if (strcmp(o->backend_id, rec->info.id) != 0) {
            continue;
        }
        rt->option_used[i] = true;
        bool declared = false;
        for (size_t j = 0; j < rec->info.option_count; j++) {
            declared = declared || strcmp(rec->info.options[j].key, o->key) == 0;
        }
        if (!declared) {
            free(opts);
            if (rec->info.option_count == 0) {
                return plxi_asprintf("unknown option '%s' for backend '%s' (it accepts no "
                                     "options)", o->key, rec->info.id);
            }
            size_t len = 1;
            for (size_t j = 0; j < rec->info.option_count; j++) {
                len += strlen(rec->info.options[j].key) + 2;
            }
            char *accepted = calloc(1, len);
            if (!accepted) {
                return oom_problem;
            }
            for (size_t j = 0; j < rec->info.option_count; j++) {
                if (j) {
                    strcat(accepted, ", ");
                }
                strcat(accepted, rec->info.options[j].key);
            }
            char *r = plxi_asprintf("unknown option '%s' for backend '%s' (accepted: %s)",
                                    o->key, rec->info.id, accepted);
            free(accepted);
            return r;
        }
        for (size_t j = 0; j < k; j++) {
            if (strcmp(opts[j].key, o->key) == 0) {
                free(opts);
                return plxi_asprintf("option '%s' for backend '%s' is given twice", o->key,
                                     rec->info.id);
            }
        }
        opts[k].key = o->key;
        opts[k].value = o->value;
        k++;
    }
    if (threads) {
        opts[k].key = "threads";
        opts[k].value = rt->intra_op_threads;
        k++;
    }
    *out = opts;
    *out_count = k;
    return NULL;
}

/* Takes ownership of `rec` (a candidate with path, handle and host table set
 * up) and of `entry`'s result: validates it and either adds it to the
 * runtime or rejects it. */
static plx_status register_candidate(plx_runtime *rt, plxi_backend_record *rec,
                                     plx_backend_entry_fn entry) {
    const unsigned host_major = PLX_ABI_VERSION_MAJOR, host_minor = PLX_ABI_VERSION_MINOR;

    /* what the entry logs at error level explains a NULL result. */
    rec->capture_errors = true;
    phase("its entry point");
    const plx_backend_descriptor *d = entry(PLX_ABI_VERSION, &rec->host);
    rec->capture_errors = false;
    if (!d) {
        if (rec->captured_errors) {
            return reject(rt, rec, "entry point returned no descriptor: %s",
                          rec->captured_errors);
        }
        return reject(rt, rec, "entry point returned no descriptor (the backend logged no "
                               "reason)");
    }
    /* read struct_size and abi_version first; they never move. */
    if (d->struct_size < DESCRIPTOR_HEADER_SIZE) {
        return reject(rt, rec, "descriptor too small: %u bytes, ABI 1.0 needs at least %zu",
                      d->struct_size, (size_t)DESCRIPTOR_V1_0_SIZE);
    }
    rec->info.abi_version = d->abi_version;
    unsigned major = PLX_ABI_VERSION_GET_MAJOR(d->abi_version);
    unsigned minor = PLX_ABI_VERSION_GET_MINOR(d->abi_version);
    if (major != host_major) {
        return reject(rt, rec,
                      "built for ABI %u.%u, this host implements %u.%u: major versions must "
                      "match", major, minor, host_major, host_minor);
    }
    if (minor > host_minor) {
        return reject(rt, rec,
                      "built for ABI %u.%u, this host implements %u.%u: the backend needs a "
                      "newer host", major, minor, host_major, host_minor);
    }
    if (d->struct_size < DESCRIPTOR_V1_0_SIZE) {
        return reject(rt, rec, "descriptor too small: %u bytes, ABI 1.0 needs at least %zu",
                      d->struct_size, (size_t)DESCRIPTOR_V1_0_SIZE);
    }
    /* id, name, version. */
    if (!d->id) {
        return reject(rt, rec, "descriptor has no id");
    }
    if (!valid_id(d->id)) {
        char *shown = plxi_sanitize(d->id, MAX_ID_LEN + 1);
        if (!shown) {
            plxi_backend_record_destroy(rec);
            return oom();
        }
        plx_status s = reject(rt, rec,
                              "invalid backend id '%s%s': must match [a-z][a-z0-9_]* and "
                              "have 1 to 63 characters",
                              shown, strnlen(d->id, MAX_ID_LEN + 1) > MAX_ID_LEN ? "..." : "");
        free(shown);
        return s;
    }
    rec->info.id = plxi_strdup(d->id);
    if (!rec->info.id) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    free(rec->log_source);
    rec->log_source = plxi_strdup(d->id);
    if (!rec->log_source) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    if (!d->name || strnlen(d->name, MAX_NAME_LEN + 1) > MAX_NAME_LEN) {
        return reject(rt, rec, "backend '%s' has %s", d->id,
                      d->name ? "a name longer than 255 bytes" : "no name");
    }
    if (!d->version || !valid_semver(d->version)) {
        char *shown = d->version ? plxi_sanitize(d->version, MAX_VERSION_LEN) : NULL;
        plx_status s = reject(rt, rec,
                              "invalid version '%s' for backend '%s': not a semantic version "
                              "(MAJOR.MINOR.PATCH)",
                              shown ? shown : "(null)", d->id);
        free(shown);
        return s;
    }
    rec->info.name = plxi_sanitize(d->name, MAX_NAME_LEN);
    rec->info.version = plxi_strdup(d->version);
    if (!rec->info.name || !rec->info.version) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    /* the function table. */
    const plx_backend_functions *f = d->functions;
    if (!f) {
        return reject(rt, rec, "descriptor has no function table");
    }
    if (f->struct_size < FUNCTIONS_V1_0_SIZE) {
        return reject(rt, rec, "function table too small: %u bytes, ABI 1.0 needs at least %zu",
                      f->struct_size, (size_t)FUNCTIONS_V1_0_SIZE);
    }
    memcpy(&rec->functions, f,
           f->struct_size < sizeof rec->functions ? f->struct_size : sizeof rec->functions);
    rec->functions_size = f->struct_size;
    if (!rec->functions.create) {
        return reject(rt, rec, "required function 'create' is NULL");
    }
    if (!rec->functions.destroy) {
        return reject(rt, rec, "required function 'destroy' is NULL");
    }
    if (minor < 1) {
        /* an ABI 1.0 backend has no network functions, whatever its
         * table's size says. */
        size_t keep = FUNCTIONS_V1_0_SIZE;
        memset((char *)&rec->functions + keep, 0, sizeof rec->functions - keep);
    }
    if (!decide_layers(rec, minor)) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    if (rec->functions.check_layer) {
        /* a backend that runs layers provides the whole group. */
        static const struct {
            size_t offset;
            const char *name;
        } required[] = {
#define REQ(f) {offsetof(plx_backend_functions, f), #f}
            REQ(create_factory),        REQ(destroy_factory),        REQ(create_tensor_handle),
            REQ(destroy_tensor_handle), REQ(allocate_tensor_handle), REQ(release_tensor_handle),
            REQ(map_tensor_handle),     REQ(unmap_tensor_handle),    REQ(create_workload),
            REQ(destroy_workload),      REQ(execute_workload),
#undef REQ
        };
        for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
            void (*fn)(void);
            memcpy(&fn, (const char *)&rec->functions + required[i].offset, sizeof fn);
            if (!fn) {
                return reject(rt, rec,
                              "required function '%s' is NULL (the backend sets check_layer, so "
                              "it runs layers)", required[i].name);
            }
        }
        /* the backend allocator's pair comes with the import that
         * binds what it allocates; the import may also stand alone. */
        if (!!rec->functions.allocate_planned_buffer != !!rec->functions.free_planned_buffer ||
            (rec->functions.allocate_planned_buffer && !rec->functions.import_external_memory)) {
            return reject(rt, rec, "required function '%s' is NULL (allocate_planned_buffer, "
                                   "free_planned_buffer and import_external_memory go together)",
                          !rec->functions.allocate_planned_buffer ? "allocate_planned_buffer"
                          : !rec->functions.free_planned_buffer   ? "free_planned_buffer"
                                                                  : "import_external_memory");
        }
        if (rec->functions.import_external_memory && !rec->functions.unimport_tensor_handle) {
            return reject(rt, rec, "required function 'unimport_tensor_handle' is NULL (the "
                                   "backend sets import_external_memory)");
        }
        if (rec->functions.import_tensor_handle && !rec->functions.unimport_tensor_handle) {
            return reject(rt, rec, "required function 'unimport_tensor_handle' is NULL (the "
                                   "backend sets import_tensor_handle)");
        }
    }
    char *problem = copy_options(rec, d);
    if (!problem && d->option_count && !rec->info.options) {
        problem = oom_problem;
    }
    if (problem) {
        return reject_with(rt, rec, problem);
    }

    /* Deliberate exclusions come before duplicate detection, so that a
     * filtered-out copy does not shadow anything. */
    if (!filter_allows(rt, rec->info.id)) {
        plx_status s = add_rejection(rt, &rt->skipped, rec->info.path, rec->info.id,
                                     "not listed in PLEXUS_BACKENDS");
        plxi_backend_record_destroy(rec);
        return s;
    }
    for (size_t i = 0; i < rt->backends.count; i++) {
        const plxi_backend_record *other = rt->backends.items[i];
        if (strcmp(other->info.id, rec->info.id) == 0) {
            return reject(rt, rec, "duplicate backend id '%s': already provided by %s",
                          rec->info.id, other->info.path ? other->info.path : "a static backend");
        }
    }

    /* options the application gave for this backend. */
    plx_option *opts = NULL;
    size_t opt_count = 0;
    problem = collect_options(rt, rec, &opts, &opt_count);
    if (problem) {
        return reject_with(rt, rec, problem);
    }

    /* availability. An unavailable backend is listed, not rejected; its
     * file is closed since nothing of it is used. */
    if (rec->functions.check_available) {
        phase("check_available");
        plx_status s = rec->functions.check_available(&rec->host);
        if (s) {
            rec->info.available = false;
            rec->info.reason = plxi_strdup(plx_status_get_message(s));
            plx_status_free(s);
            free(opts);
            if (!rec->info.reason || !plxi_ptr_vec_push(&rt->backends, rec)) {
                plxi_backend_record_destroy(rec);
                return oom();
            }
            if (rec->dl_handle) {
                dlclose(rec->dl_handle);
                rec->dl_handle = NULL;
            }
            memset(&rec->functions, 0, sizeof rec->functions);
            plxi_log(&rt->logger, PLX_LOG_INFO, "plexus", "backend '%s' is unavailable: %s",
                     rec->info.id, rec->info.reason);
            return NULL;
        }
    }

    plx_backend *instance = NULL;
    phase("create");
    plx_status s = rec->functions.create(&rec->host, opts, opt_count, &instance);
    free(opts);
    if (s) {
        if (instance) {
            rec->functions.destroy(instance);
        }
        return fail_in(rt, rec, "create", s);
    }
    if (!instance) {
        return reject(rt, rec, "create returned success but no instance");
    }
    rec->instance = instance;

    if (rec->functions.get_capabilities) {
        const plx_capability *caps = NULL;
        size_t count = 0;
        phase("get_capabilities");
        s = rec->functions.get_capabilities(instance, &caps, &count);
        if (s) {
            return fail_in(rt, rec, "get_capabilities", s);
        }
        problem = copy_capabilities(rec, caps, count);
        if (problem) {
            return reject_with(rt, rec, problem);
        }
    }
    problem = check_queued(rec);
    char beyond[96];
    if (!problem && plx_backend_info_has_capability(&rec->info, PLX_CAP_ALLOCATES_PLANNED_MEMORY) &&
        !rec->functions.allocate_planned_buffer) {
        problem = plxi_asprintf("required function 'allocate_planned_buffer' is NULL%s (the "
                                "backend reports %s; ABI 1.4 or later)",
                                beyond_table(rec, offsetof(plx_backend_functions,
                                                           allocate_planned_buffer),
                                             beyond, sizeof beyond),
                                PLX_CAP_ALLOCATES_PLANNED_MEMORY);
    }
    if (!problem && plx_backend_info_capability(&rec->info, PLX_CAP_IMPORT_MEMORY_KINDS) &&
        !rec->functions.import_external_memory) {
        problem = plxi_asprintf("required function 'import_external_memory' is NULL (the "
                                "backend reports %s; ABI 1.4 or later)",
                                PLX_CAP_IMPORT_MEMORY_KINDS);
    }
    /* a backend lending dma-bufs describes them through
     * export_external_memory, which the host calls for every import layer
     * that reads its memory as a dma-buf. */
    if (!problem && plx_backend_info_has_capability(&rec->info, PLX_CAP_EXPORT_DMA_BUF) &&
        !rec->functions.export_external_memory) {
        problem = plxi_asprintf("required function 'export_external_memory' is NULL%s (the "
                                "backend reports %s; ABI 1.4 or later)",
                                beyond_table(rec, offsetof(plx_backend_functions,
                                                           export_external_memory),
                                             beyond, sizeof beyond),
                                PLX_CAP_EXPORT_DMA_BUF);
    }
    if (problem) {
        return reject_with(rt, rec, problem);
    }
    if (!find_table_warning(rec)) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    if (rec->table_warning) {
        plxi_log(&rt->logger, PLX_LOG_WARN, "plexus", "backend '%s': %s", rec->info.id,
                 rec->table_warning);
    }
    rec->info.available = true;
    if (!plxi_ptr_vec_push(&rt->backends, rec)) {
        plxi_backend_record_destroy(rec);
        return oom();
    }
    plxi_log(&rt->logger, PLX_LOG_INFO, "plexus", "loaded backend '%s' (%s %s) from %s%s%s",
             rec->info.id, rec->info.name, rec->info.version,
             rec->info.path ? rec->info.path : "the application",
             rec->layers_reason ? "; it runs no layers: " : "",
             rec->layers_reason ? rec->layers_reason : "");
    return NULL;
}

static plxi_backend_record *new_record(plx_runtime *rt, const char *path, const char *source) {
    plxi_backend_record *rec = calloc(1, sizeof *rec);
    if (!rec) {
        return NULL;
    }
    rec->logger = &rt->logger;
    rec->runtime = rt;
    rec->log_source = plxi_strdup(source);
    rec->info.path = path ? plxi_strdup(path) : NULL;
    if (!rec->log_source || (path && !rec->info.path)) {
        plxi_backend_record_destroy(rec);
        return NULL;
    }
    plxi_host_init(rec);
    return rec;
}

plx_status plxi_registry_load_static(plx_runtime *rt, plx_backend_entry_fn entry) {
    plxi_backend_record *rec = new_record(rt, NULL, "static");
    if (!rec) {
        return oom();
    }
    if (!entry) {
        return reject(rt, rec, "static backend entry function is NULL");
    }
    return register_candidate(rt, rec, entry);
}

static bool already_loaded(const plx_runtime *rt, const struct stat *st, const char **out_path) {
    for (size_t i = 0; i < rt->backends.count; i++) {
        const plxi_backend_record *r = rt->backends.items[i];
        if (r->info.path && r->file_dev == st->st_dev && r->file_ino == st->st_ino) {
            *out_path = r->info.path;
            return true;
        }
    }
    return false;
}

/* True (logged as `shown`, the path the scan reached) when `path` (as
 * given, or resolved) was rejected or skipped earlier in this scan: a file
 * is judged once, however often the search path reaches it. */
static bool already_judged(const plx_runtime *rt, const char *path, const char *shown) {
    for (size_t i = 0; i < rt->rejections.count + rt->skipped.count; i++) {
        const plx_rejection *r = i < rt->rejections.count
                                     ? rt->rejections.items[i]
                                     : rt->skipped.items[i - rt->rejections.count];
        if (r->path && strcmp(r->path, path) == 0) {
            plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "%s: already looked at", shown);
            return true;
        }
    }
    return false;
}

/* Whether someone but root and this user can write `what` (st: its stat):
 * it is world-writable, or another user owns it; the reason goes to buf. */
static bool others_can_write(const struct stat *st, const char *what, char *buf, size_t size) {
    if (st->st_mode & S_IWOTH) {
        snprintf(buf, size, "%s is world-writable", what);
        return true;
    }
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(buf, size, "%s is owned by uid %ju, neither root nor this user", what,
                 (uintmax_t)st->st_uid);
        return true;
    }
    return false;
}

/* Who can replace the file at `resolved` (st: its stat) and so run code in
 * this process: NULL when only root and this user can, else why not. The
 * file and its directory count; a directory's sticky bit does not help, as
 * anyone may still add a plug-in to it. */
static const char *writable_by_others(const char *resolved, const struct stat *st, char *buf,
                                      size_t size) {
    if (others_can_write(st, "the file", buf, size)) {
        return buf;
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(resolved, '/');
    size_t len = slash ? (size_t)(slash - resolved) : 0;
    if (len >= sizeof dir) {
        return NULL;
    }
    memcpy(dir, resolved, len);
    dir[len] = '\0';
    struct stat dst;
    return stat(len ? dir : "/", &dst) == 0 && others_can_write(&dst, "its directory", buf, size)
               ? buf
               : NULL;
}

/* Opens one file that passed the file-type checks. */
static plx_status load_file(plx_runtime *rt, const char *path) {
    char resolved[PATH_MAX];
    if (!realpath(path, resolved)) {
        if (errno == ENOMEM) {
            return oom();
        }
        return add_rejection(rt, &rt->rejections, path, NULL, "cannot resolve path: %s",
                             strerror(errno));
    }
    struct stat st;
    if (stat(resolved, &st) != 0) {
        return add_rejection(rt, &rt->rejections, resolved, NULL, "cannot stat: %s",
                             strerror(errno));
    }
    const char *first = NULL;
    if (already_loaded(rt, &st, &first)) {
        plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "%s: same file as %s, loaded once",
                 path, first);
        return NULL;
    }
    /* Files rejected or skipped earlier in this scan are not retried. */
    if (already_judged(rt, resolved, path)) {
        return NULL;
    }
    char why[256];
    const char *unsafe = writable_by_others(resolved, &st, why, sizeof why);
    if (unsafe && getauxval(AT_SECURE)) {
        return add_rejection(rt, &rt->rejections, resolved, NULL,
                             "refused in a setuid or setgid process: %s", unsafe);
    }
    if (unsafe && !plxi_runtime_note(rt, "plug-in %s: %s: whoever can write it runs code in "
                                         "this process",
                                     resolved, unsafe)) {
        return oom();
    }
    /* Before dlopen maps it: a truncated file would fault inside the loader. */
    if (!plxi_elf_check(resolved, why, sizeof why)) {
        return add_rejection(rt, &rt->rejections, resolved, NULL, "%s", why);
    }
    /* Its code runs in the probe first, when the application asks. */
    char *probed = NULL;
    plx_status ps = plxi_probe_plugin(rt, resolved, &st, &probed);
    if (ps || probed) {
        if (!ps) {
            ps = add_rejection(rt, &rt->rejections, resolved, NULL, "%s", probed);
        }
        free(probed);
        return ps;
    }
    const char *base = strrchr(resolved, '/');
    plxi_backend_record *rec = new_record(rt, resolved, base ? base + 1 : resolved);
    if (!rec) {
        return oom();
    }
    rec->file_dev = st.st_dev;
    rec->file_ino = st.st_ino;
    plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "opening %s", resolved);
    phase("its constructors (dlopen)");
    errno = 0;
    rec->dl_handle = dlopen(resolved, RTLD_NOW | RTLD_LOCAL);
    if (!rec->dl_handle) {
        int dl_errno = errno; /* ENOMEM where the loader's allocation failed */
        const char *err = dlerror();
        if (dl_errno == ENOMEM || loader_out_of_memory(err)) {
            return out_of_memory_in(rec, "dlopen", err);
        }
        return reject(rt, rec, "dlopen failed: %s", err ? err : "unknown error");
    }
    dlerror();
    void *sym = dlsym(rec->dl_handle, PLX_BACKEND_ENTRY_SYMBOL);
    if (!sym) {
        return reject(rt, rec, "no entry point '%s' in shared library", PLX_BACKEND_ENTRY_SYMBOL);
    }
    /* POSIX guarantees that a data pointer from dlsym converts to a function
     * pointer; the memcpy keeps -Wpedantic quiet about it. */
    plx_backend_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    return register_candidate(rt, rec, entry);
}

/* *.so or *.so.N[.N...] */
static bool plugin_file_name(const char *name) {
    for (const char *p = strstr(name, ".so"); p; p = strstr(p + 1, ".so")) {
        const char *q = p + 3;
        if (*q == '\0') {
            return p != name;
        }
        bool ok = true;
        while (ok && *q == '.') {
            q++;
            if (*q < '0' || *q > '9') {
                ok = false;
            }
            while (*q >= '0' && *q <= '9') {
                q++;
            }
        }
        if (ok && *q == '\0') {
            return p != name;
        }
    }
    return false;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks one directory entry's type, then loads it. */
static plx_status consider(plx_runtime *rt, const char *path) {
    if (already_judged(rt, path, path)) {
        return NULL;
    }
    struct stat lst, st;
    if (lstat(path, &lst) != 0) {
        if (errno == ENOMEM) {
            return oom();
        }
        return add_rejection(rt, &rt->rejections, path, NULL, "cannot stat: %s",
                             strerror(errno));
    }
    if (stat(path, &st) != 0) {
        int err = errno;
        if (err == ENOMEM) {
            return oom();
        }
        if (S_ISLNK(lst.st_mode) && err == ENOENT) {
            return add_rejection(rt, &rt->rejections, path, NULL, "broken symbolic link");
        }
        if (err == ELOOP) {
            return add_rejection(rt, &rt->rejections, path, NULL, "symbolic link loop");
        }
        return add_rejection(rt, &rt->rejections, path, NULL, "cannot stat: %s",
                             strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        return add_rejection(rt, &rt->rejections, path, NULL, "not a regular file");
    }
    if (access(path, R_OK) != 0) {
        return add_rejection(rt, &rt->rejections, path, NULL, "not readable: %s",
                             strerror(errno));
    }
    return load_file(rt, path);
}

static plx_status scan_directory(plx_runtime *rt, plx_search_entry *entry) {
    DIR *dir = opendir(entry->path);
    if (!dir && errno == ENOMEM) { /* opendir allocates its buffer */
        return oom();
    }
    if (!dir) {
        char *problem = plxi_asprintf("cannot open directory: %s", strerror(errno));
        if (!problem) {
            return oom();
        }
        free((char *)entry->problem);
        entry->problem = problem;
        plxi_log(&rt->logger, PLX_LOG_WARN, "plexus", "%s: %s", entry->path, problem);
        return NULL;
    }
    plxi_ptr_vec names = {0};
    plx_status s = NULL;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
                                     (de->d_name[1] == '.' && de->d_name[2] == '\0'))) {
            continue;
        }
        if (!plugin_file_name(de->d_name)) {
            plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "%s/%s: ignored (not *.so or *.so.N)",
                     entry->path, de->d_name);
            continue;
        }
        char *name = plxi_strdup(de->d_name);
        if (!name || !plxi_ptr_vec_push(&names, name)) {
            free(name);
            s = oom();
            break;
        }
    }
    closedir(dir);
    if (names.count) {
        qsort(names.items, names.count, sizeof names.items[0], compare_names);
    }
    for (size_t i = 0; !s && i < names.count; i++) {
        char *path = plxi_asprintf("%s/%s", entry->path, (const char *)names.items[i]);
        s = path ? consider(rt, path) : oom();
        free(path);
    }
    for (size_t i = 0; i < names.count; i++) {
        free(names.items[i]);
    }
    plxi_ptr_vec_release(&names);
    return s;
}

plx_status plxi_registry_scan(plx_runtime *rt, plx_search_entry *entry) {
    struct stat st;
    if (stat(entry->path, &st) != 0) {
        const char *problem = errno == ENOENT ? "does not exist" : strerror(errno);
        char *copy = plxi_strdup(problem);
        if (!copy) {
            return oom();
        }
        free((char *)entry->problem);
        entry->problem = copy;
        plxi_log(&rt->logger, PLX_LOG_INFO, "plexus", "search path %s (%s): %s", entry->path,
                 plx_search_source_name(entry->source), problem);
        return NULL;
    }
    plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "scanning %s (%s)", entry->path,
             plx_search_source_name(entry->source));
    if (S_ISDIR(st.st_mode)) {
        return scan_directory(rt, entry);
    }
    /* A file named explicitly is loaded whatever its name. */
    return consider(rt, entry->path);
}

/* The record behind a plx_backend_info the runtime handed out: `info` is
 * the record's first member. */
static const plxi_backend_record *record_of(const plx_backend_info *backend) {
    return (const plxi_backend_record *)(const void *)((const char *)backend -
                                                        offsetof(plxi_backend_record, info));
}

PLX_API bool plx_backend_info_runs_layers(const plx_backend_info *backend) {
    return backend && backend->available && !record_of(backend)->layers_reason;
}

PLX_API const char *plx_backend_info_no_layers_reason(const plx_backend_info *backend) {
    if (!backend) {
        return NULL;
    }
    const plxi_backend_record *rec = record_of(backend);
    if (rec->layers_reason) {
        return rec->layers_reason;
    }
    return backend->available ? NULL : "it is unavailable on this machine";
}

PLX_API const char *plx_backend_info_table_warning(const plx_backend_info *backend) {
    return backend ? record_of(backend)->table_warning : NULL;
}
