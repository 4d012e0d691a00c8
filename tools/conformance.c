/* `plexus conformance BACKEND.so|ID`: checks one backend plug-in against
 * docs/backend-abi.md, as far as a program can (docs/conformance.md,
 * "Checking a backend").
 *
 * The plug-in is loaded alone into a runtime through the core's discovery
 * (its search path is the file, nothing else), so that what the core
 * already validates (R-1, R-2, R-4 to when it loads a
 * file) is the core's verdict, with its reason: a rejected file fails the
 * requirement the reason belongs to. Then this file checks what the core
 * does not: where the descriptor and tables live and how their struct_size
 * is computed (by calling the entry point once more, as a second runtime
 * would), the options' defaults and refusals, the capability list's
 * consistency, and, through tools/conformance_ops.c, networks run on
 * the backend. Every backend allocation through the host table is counted
 * (plx_runtime_options.host_allocator) for the memory checks of R-13 and
 * R-18 (7). Exit status 0 only when no check failed. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <plexus/plexus.h>

#include "cli.h"
#include "commands.h"
#include "conformance.h"
#include "json_writer.h"
#include "option_arg.h"
#ifdef PLX_HAVE_NODE_TESTS
#include "node_tests.h"
#endif

static const char conformance_usage[] =
    "usage: plexus conformance [--json] [--option ID.KEY=VALUE]... [--verbose]\n"
    "                          [--tolerance-scale X] [--onnx-node-tests DIR] BACKEND\n"
    "\n"
    "Checks one backend plug-in against the backend ABI (docs/backend-abi.md):\n"
    "BACKEND is a plug-in file (a path, e.g. build/plugins/sample/sample.so) or a\n"
    "backend id found through the normal discovery (PLEXUS_BACKEND_PATH, the\n"
    "installed directory). The plug-in is loaded alone; each check prints\n"
    "'R-n  name  pass|fail|n/a  reason'.\n"
    "\n"
    "  --json                 print one JSON document instead of text\n"
    "  --option ID.KEY=VALUE  create the backend with KEY=VALUE; may be repeated\n"
    "  --tolerance-scale X    multiply the float tolerances by X (default 1)\n"
    "  --onnx-node-tests DIR  also run the ONNX backend node tests of DIR\n"
    "                         (onnx/backend/test/data/node) on the backend alone\n"
    "  --verbose              name each network case on stderr as it runs\n"
    "\n"
    "Exit status: 0 when no check failed, 1 when one did, 2 for bad usage.\n";

/* ------------------------------------------------------------------------ */
/* Report                                                                     */
/* ------------------------------------------------------------------------ */

void conf_add(conf_report *r, int requirement, const char *name, conf_verdict verdict,
              const char *fmt, ...) {
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        conf_check *c = realloc(r->checks, cap * sizeof *c);
        if (!c) {
            r->out_of_memory = true;
            return;
        }
        r->checks = c;
        r->cap = cap;
    }
    char *reason = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&reason, fmt, ap) < 0) {
        reason = NULL;
    }
    va_end(ap);
    char *n = strdup(name);
    if (!reason || !n) {
        free(reason);
        free(n);
        r->out_of_memory = true;
        return;
    }
    /* one line: control characters become spaces */
    for (char *p = reason; *p; p++) {
        if ((unsigned char)*p < 0x20) {
            *p = ' ';
        }
    }
    r->checks[r->count++] = (conf_check){requirement, n, verdict, reason};
}

static void report_free(conf_report *r) {
    for (size_t i = 0; i < r->count; i++) {
        free(r->checks[i].name);
        free(r->checks[i].reason);
    }
    free(r->checks);
}

static const char *verdict_name(conf_verdict v) {
    return v == CONF_PASS ? "pass" : v == CONF_FAIL ? "fail" : "n/a";
}

/* ------------------------------------------------------------------------ */
/* Counting host allocator                                                    */
/* ------------------------------------------------------------------------ */

/* Each block carries its size in a header of `alignment` bytes (at least
 * 16) before the pointer returned. */
typedef struct block_header {
    size_t size, offset;
} block_header;

static void *counting_allocate(void *user_data, size_t size, size_t alignment) {
    conf_alloc_counter *c = user_data;
    if (alignment < sizeof(block_header)) {
        alignment = sizeof(block_header) < 16 ? 16 : sizeof(block_header);
    }
    if (size > SIZE_MAX - alignment) {
        return NULL;
    }
    void *base = NULL;
    if (posix_memalign(&base, alignment, size + alignment) != 0) {
        return NULL;
    }
    char *p = (char *)base + alignment;
    block_header h = {size, alignment};
    memcpy(p - sizeof h, &h, sizeof h);
    atomic_fetch_add(&c->allocs, 1);
    atomic_fetch_add(&c->live_bytes, size);
    return p;
}

static void counting_free(void *user_data, void *ptr) {
    conf_alloc_counter *c = user_data;
    if (!ptr) {
        return;
    }
    block_header h;
    memcpy(&h, (char *)ptr - sizeof h, sizeof h);
    atomic_fetch_add(&c->frees, 1);
    atomic_fetch_sub(&c->live_bytes, h.size);
    free((char *)ptr - h.offset);
}

plx_allocator conf_counting_allocator(conf_alloc_counter *c) {
    return (plx_allocator){c, counting_allocate, counting_free, PLX_MEMORY_SOURCE_MALLOC};
}

size_t conf_alloc_live(conf_alloc_counter *c) {
    return atomic_load(&c->allocs) - atomic_load(&c->frees);
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct conf_args {
    const char *target;
    bool json, verbose;
    double tolerance_scale;
    const char *node_tests;
    plx_backend_option *options;
    size_t option_count;
} conf_args;

static int parse_args(int argc, char **argv, conf_args *a) {
    a->tolerance_scale = 1.0;
    a->options = calloc((size_t)argc + 1, sizeof *a->options);
    if (!a->options) {
        fputs("plexus conformance: out of memory\n", stderr);
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        bool takes = strcmp(arg, "--option") == 0 || strcmp(arg, "--onnx-node-tests") == 0 ||
                     strcmp(arg, "--tolerance-scale") == 0;
        if (takes && i + 1 >= argc) {
            return usage_error("conformance", conformance_usage, "%s needs a value", arg);
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(conformance_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = true;
        } else if (strcmp(arg, "--verbose") == 0) {
            a->verbose = true;
        } else if (strcmp(arg, "--option") == 0) {
            i++;
            if (!option_arg_parse(argv[i], &a->options[a->option_count])) {
                return usage_error("conformance", conformance_usage,
                                   "bad --option '%s' (ID.KEY=VALUE)", argv[i]);
            }
            a->option_count++;
        } else if (strcmp(arg, "--onnx-node-tests") == 0) {
            a->node_tests = argv[++i];
        } else if (strcmp(arg, "--tolerance-scale") == 0) {
            char *end;
            errno = 0;
            a->tolerance_scale = strtod(argv[++i], &end);
            if (errno || *end || !(a->tolerance_scale > 0 && a->tolerance_scale <= 1e6)) {
                return usage_error("conformance", conformance_usage,
                                   "bad --tolerance-scale '%s' (a number above 0)", argv[i]);
            }
        } else if (arg[0] == '-' && arg[1]) {
            return usage_error("conformance", conformance_usage,
                               "unknown argument '%s' for 'conformance'", arg);
        } else if (a->target) {
            return usage_error("conformance", conformance_usage,
                               "one backend only ('%s' and '%s')", a->target, arg);
        } else {
            a->target = arg;
        }
    }
    if (!a->target) {
        return usage_error("conformance", conformance_usage, "no backend given");
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Finding the plug-in                                                        */
/* ------------------------------------------------------------------------ */

static void log_quiet(void *user_data, plx_log_level level, const char *source,
                      const char *message) {
    (void)user_data;
    if (level <= PLX_LOG_WARN) {
        fprintf(stderr, "plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
    }
}

/* A target with a '/' or ending in ".so" is a file; otherwise an id, whose
 * file the normal discovery finds (also when it rejects it: the rejection
 * names the id when the descriptor was read). Returns the path (malloc'd)
 * or NULL after printing why. */
static char *resolve_target(const char *target) {
    size_t n = strlen(target);
    if (strchr(target, '/') || (n > 3 && strcmp(target + n - 3, ".so") == 0)) {
        struct stat st;
        if (stat(target, &st) != 0) {
            fprintf(stderr, "plexus conformance: %s: %s\n", target, strerror(errno));
            return NULL;
        }
        return strdup(target);
    }
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.log_fn = log_quiet;
    plx_runtime *rt = NULL;
    plx_status s = plx_runtime_create(&o, &rt);
    if (s) {
        fprintf(stderr, "plexus conformance: cannot create a runtime to find '%s': %s\n",
                target, plx_status_get_message(s));
        plx_status_free(s);
        return NULL;
    }
    char *path = NULL;
    const plx_backend_info *b = plx_runtime_find_backend(rt, target);
    if (b && b->path) {
        path = strdup(b->path);
    } else if (b) {
        fprintf(stderr, "plexus conformance: '%s' is compiled into the application, not a "
                "plug-in file\n", target);
    }
    for (size_t i = 0; !b && !path && i < plx_runtime_rejection_count(rt); i++) {
        const plx_rejection *rj = plx_runtime_rejection(rt, i);
        if (rj->id && rj->path && strcmp(rj->id, target) == 0) {
            path = strdup(rj->path);
        }
    }
    for (size_t i = 0; !b && !path && i < plx_runtime_skipped_count(rt); i++) {
        const plx_rejection *rj = plx_runtime_skipped(rt, i);
        if (rj->id && rj->path && strcmp(rj->id, target) == 0) {
            path = strdup(rj->path);
        }
    }
    if (!b && !path) {
        fprintf(stderr, "plexus conformance: no backend '%s' found (searched:", target);
        for (size_t i = 0; i < plx_runtime_search_path_count(rt); i++) {
            fprintf(stderr, " %s", plx_runtime_search_path(rt, i)->path);
        }
        fputs("); give the plug-in's path instead\n", stderr);
    }
    plx_runtime_destroy(&rt);
    return path;
}

/* ------------------------------------------------------------------------ */
/* The core's verdict on the file                                             */
/* ------------------------------------------------------------------------ */

/* The requirement a rejection reason of core/src/registry.c belongs to
 * (docs/backend-abi.md, "Rejections, unavailable and skipped backends"). */
static int requirement_of_rejection(const char *reason, bool options_given) {
    static const struct {
        const char *text;
        int requirement;
    } map[] = {
        {"no entry point", 2},
        {"entry point returned no descriptor", 6},
        {"descriptor too small", 1},
        {"function table too small", 1},
        {"built for ABI", 5},
        {"descriptor has no id", 8},
        {"invalid backend id", 8},
        {"has no name", 8},
        {"name longer than", 8},
        {"invalid version", 8},
        {"duplicate backend id", 8},
        {"descriptor has no function table", 4},
        {"required function 'create'", 4},
        {"required function 'destroy'", 4},
        {"the backend sets check_layer", 16},
        {"the backend sets import_tensor_handle", 16},
        {"the backend reports queued_execution", 24},
        {"the backend reports memory_export_dma_buf", 26},
        {"allocate_planned_buffer", 26},
        {"invalid option", 9},
        {"is declared twice", 9},
        {"options but no option list", 9},
        {"unknown option", 9},
        {"is given twice", 9},
        {"get_capabilities failed", 10},
        {"invalid capability", 10},
        {"capability '", 10},
        {"undefined symbol: plx_", 3},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strstr(reason, map[i].text)) {
            return map[i].requirement;
        }
    }
    if (strncmp(reason, "create failed", 13) == 0 || strstr(reason, "no instance")) {
        return options_given ? 9 : 12;
    }
    return 2; /* not loadable as a plug-in at all */
}

/* ------------------------------------------------------------------------ */
/* The descriptor, read by calling the entry point once more                 */
/* ------------------------------------------------------------------------ */

#define FUNCTION_LIST(X)                                                                       \
    X(check_available) X(create) X(destroy) X(get_capabilities) X(check_layer)                 \
    X(create_factory) X(destroy_factory) X(factory_workloads_created) X(create_tensor_handle)  \
    X(destroy_tensor_handle) X(allocate_tensor_handle) X(release_tensor_handle)                \
    X(map_tensor_handle) X(unmap_tensor_handle) X(import_tensor_handle)                        \
    X(unimport_tensor_handle) X(create_workload) X(destroy_workload) X(configure_workload)     \
    X(execute_workload) X(create_sub_tensor_handle) X(get_memory_strategy)                     \
    X(optimize_subgraph) X(create_queue) X(destroy_queue) X(enqueue_workload)                  \
    X(queue_signal) X(fence_wait) X(fence_query) X(destroy_fence) X(allocate_planned_buffer)   \
    X(free_planned_buffer) X(import_external_memory) X(export_external_memory)

typedef struct function_field {
    const char *name;
    size_t offset, end;
} function_field;

#define FUNCTION_FIELD(f)                                                                \
    {#f, offsetof(plx_backend_functions, f), PLX_STRUCT_SIZE_UPTO(plx_backend_functions, f)},
static const function_field function_fields[] = {FUNCTION_LIST(FUNCTION_FIELD)};

/* What the tool's own entry call logged at error level. */
typedef struct entry_log {
    char text[512];
} entry_log;

static void entry_host_log(const plx_host *host, plx_log_level level, const char *fmt, ...) {
    entry_log *l = host->host_data;
    if (level != PLX_LOG_ERROR || l->text[0]) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->text, sizeof l->text, fmt, ap);
    va_end(ap);
}

static void *entry_host_alloc(const plx_host *host, size_t size, size_t alignment) {
    (void)host;
    void *p = NULL;
    if (alignment < sizeof(void *)) {
        alignment = sizeof(void *);
    }
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : NULL;
}

static void entry_host_free(const plx_host *host, void *ptr) {
    (void)host;
    free(ptr);
}

static plx_status entry_status_create(const plx_host *host, plx_status_code code,
                                      const char *fmt, ...) {
    (void)host;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt ? fmt : "", ap);
    va_end(ap);
    return plx_status_create(code, "%s", buf);
}

static plx_status_code entry_status_code(const plx_host *host, plx_status s) {
    (void)host;
    return plx_status_get_code(s);
}

static const char *entry_status_message(const plx_host *host, plx_status s) {
    (void)host;
    return plx_status_get_message(s);
}

static void entry_status_free(const plx_host *host, plx_status s) {
    (void)host;
    plx_status_free(s);
}

static uint64_t entry_now_ns(const plx_host *host) {
    (void)host;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void entry_record_event(const plx_host *host, const plx_profile_event *e) {
    (void)host;
    (void)e;
}

/* Whether `p` lies in the file `path` (dladdr: the object that maps it). */
static bool in_file(const void *p, const char *path) {
    Dl_info di;
    if (!p || !dladdr(p, &di) || !di.dli_fname) {
        return false;
    }
    char *a = realpath(di.dli_fname, NULL), *b = realpath(path, NULL);
    bool same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

/* where the descriptor and its tables live and how their
 * sizes are computed. Calls the entry point twice with a host table of
 * this file's (as a second and third runtime would, R-2 (2)); the file is
 * already loaded by the runtime, so dlopen only takes a reference.
 * *runs_layers says whether the table sets check_layer within its size
 * (R-16 (1)), *optimizes whether it sets optimize_subgraph. */
static void check_descriptor(const char *path, conf_report *r, bool *runs_layers,
                             bool *optimizes) {
    *runs_layers = false;
    *optimizes = false;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) {
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    plx_backend_entry_fn entry = NULL;
    if (h) {
        void *sym = dlsym(h, PLX_BACKEND_ENTRY_SYMBOL);
        memcpy(&entry, &sym, sizeof entry);
    }
    if (!entry) {
        conf_add(r, 2, "entry point returns static data", CONF_FAIL,
                 "cannot call the entry point again: %s", h ? "no symbol" : dlerror());
        if (h) {
            dlclose(h);
        }
        return;
    }
    entry_log log1 = {{0}}, log2 = {{0}};
    plx_host host = {0};
    host.struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_host, record_event);
    host.abi_version = PLX_ABI_VERSION;
    host.log = entry_host_log;
    host.alloc = entry_host_alloc;
    host.free = entry_host_free;
    host.status_create = entry_status_create;
    host.status_code = entry_status_code;
    host.status_message = entry_status_message;
    host.status_free = entry_status_free;
    host.now_ns = entry_now_ns;
    host.record_event = entry_record_event;
    plx_host host2 = host;
    host.host_data = &log1;
    host2.host_data = &log2;
    const plx_backend_descriptor *d = entry(PLX_ABI_VERSION, &host);
    const plx_backend_descriptor *d2 = entry(PLX_ABI_VERSION, &host2);
    if (!d) {
        conf_add(r, 2, "entry point returns static data", CONF_FAIL,
                 "a second call returned NULL%s%s", log1.text[0] ? ": " : "", log1.text);
        dlclose(h);
        return;
    }
    if (d != d2) {
        conf_add(r, 2, "entry point returns static data", CONF_FAIL,
                 "two calls returned different descriptors: the entry returns static, "
                 "constant data and acquires nothing");
        dlclose(h);
        return;
    }
    /* a host of another major is refused by returning NULL after
     * logging why (returning the descriptor leaves it to the host's check
     * of R-5, which refuses it too). */
    entry_log log3 = {{0}};
    plx_host other = host;
    other.host_data = &log3;
    other.abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR + 1, 0);
    const plx_backend_descriptor *d3 = entry(other.abi_version, &other);
    if (!d3 && !log3.text[0]) {
        conf_add(r, 6, "refuses another host with a reason", CONF_FAIL,
                 "given a host of ABI %u.0, the entry returned NULL without logging why at "
                 "error level", PLX_ABI_VERSION_MAJOR + 1);
    } else {
        conf_add(r, 6, "refuses another host with a reason", CONF_PASS,
                 d3 ? "given a host of ABI %u.0, the entry returned its descriptor (the host's "
                      "version check refuses it, R-5)"
                    : "given a host of ABI %u.0, the entry returned NULL, logging why",
                 PLX_ABI_VERSION_MAJOR + 1);
    }
    bool desc_static = in_file(d, path);
    bool funcs_static = d->functions && in_file(d->functions, path);
    bool opts_static = !d->options || in_file(d->options, path);
    if (desc_static && funcs_static && opts_static) {
        conf_add(r, 2, "entry point returns static data", CONF_PASS,
                 "the same descriptor twice, inside the plug-in file");
        conf_add(r, 4, "tables are static", CONF_PASS,
                 "descriptor, function table and option list lie in the plug-in file");
    } else {
        conf_add(r, 2, "entry point returns static data", desc_static ? CONF_PASS : CONF_FAIL,
                 desc_static ? "the same descriptor twice, inside the plug-in file"
                             : "the descriptor is not in the plug-in's static data");
        conf_add(r, 4, "tables are static", CONF_FAIL, "the %s not in the plug-in's static data",
                 !funcs_static ? "function table is" : "option list is");
    }

    /* R-1 (4), (7): struct_size is PLX_STRUCT_SIZE_UPTO of a field, within
     * bounds, and cuts off no function the table sets. */
    static const size_t desc_ends[] = {
        PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count)};
    uint32_t ds = d->struct_size;
    bool desc_ok = ds >= desc_ends[0] && ds <= 4096;
    if (ds <= sizeof(plx_backend_descriptor) && ds != desc_ends[0]) {
        desc_ok = false;
    }
    conf_add(r, 1, "descriptor struct_size", desc_ok ? CONF_PASS : CONF_FAIL,
             desc_ok ? "%u bytes: PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count)"
                     : "%u bytes: expected PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, "
                       "option_count) (sizeof includes padding a later version may use)",
             ds);
    const plx_backend_functions *f = d->functions;
    uint32_t fs = f->struct_size;
    const function_field *last = NULL;
    for (size_t i = 0; i < sizeof function_fields / sizeof function_fields[0]; i++) {
        if (function_fields[i].end == fs) {
            last = &function_fields[i];
        }
    }
    size_t min = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities);
    uint32_t minor = PLX_ABI_VERSION_GET_MINOR(d->abi_version);
    char cut[256] = "";
    /* A backend built for the host's minor has the whole table of this
     * header, so the fields past its struct_size can be read: set ones are
     * functions the host will never see. */
    if (minor == PLX_ABI_VERSION_GET_MINOR(PLX_ABI_VERSION) && fs < sizeof *f) {
        size_t len = 0;
        for (size_t i = 0; i < sizeof function_fields / sizeof function_fields[0]; i++) {
            void *fp = NULL;
            memcpy(&fp, (const char *)f + function_fields[i].offset, sizeof fp);
            if (function_fields[i].end > fs && fp && len < sizeof cut - 40) {
                len += (size_t)snprintf(cut + len, sizeof cut - len, "%s%s", len ? ", " : "",
                                        function_fields[i].name);
            }
        }
    }
    if (cut[0]) {
        conf_add(r, 1, "function table struct_size", CONF_FAIL,
                 "%u bytes ends at '%s', but the table sets %s beyond it: the host never sees "
                 "them (name the last function in PLX_STRUCT_SIZE_UPTO)",
                 fs, last ? last->name : "?", cut);
    } else if (fs < min || fs > 65536 || (fs <= sizeof *f && !last)) {
        conf_add(r, 1, "function table struct_size", CONF_FAIL,
                 "%u bytes is not PLX_STRUCT_SIZE_UPTO(plx_backend_functions, <a function>) "
                 "from get_capabilities on", fs);
    } else {
        conf_add(r, 1, "function table struct_size", CONF_PASS,
                 "%u bytes: PLX_STRUCT_SIZE_UPTO(plx_backend_functions, %s)", fs,
                 last ? last->name : "(a later version's field)");
    }
    *runs_layers = minor >= 1 && fs >= PLX_STRUCT_SIZE_UPTO(plx_backend_functions, check_layer) &&
                   f->check_layer != NULL;
    *optimizes = *runs_layers && minor >= 2 &&
                 fs >= PLX_STRUCT_SIZE_UPTO(plx_backend_functions, optimize_subgraph) &&
                 f->optimize_subgraph != NULL;
    dlclose(h);
}

/* ------------------------------------------------------------------------ */
/* Exported and imported symbols (R-2 (1), R-3)                               */
/* ------------------------------------------------------------------------ */

/* Appends `name` to the list `buf` (", "-separated, cut with "..."). */
static void list_add(char *buf, size_t size, size_t *count, const char *name) {
    size_t len = strlen(buf);
    if (*count < 8 && len + strlen(name) + 3 < size) {
        snprintf(buf + len, size - len, "%s%s", len ? ", " : "", name);
    } else if (*count == 8 && len + 5 < size) {
        snprintf(buf + len, size - len, ", ...");
    }
    (*count)++;
}

/* Reads the file's dynamic symbol table and needed libraries (the section
 * headers, as `nm -D` and `readelf -d` do; the core has already checked
 * the ELF header and program headers). A plug-in exports plx_backend_entry
 * alone (R-2 (1)) and takes nothing from libplexus (R-3 (1)). Symbols
 * named with a leading "__" (the compiler's and sanitizers' runtime) and
 * absolute ones (_edata, _end) are not the author's. */
static void check_symbols(const char *path, conf_report *r) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ElfW(Ehdr))) {
        conf_add(r, 2, "exports one symbol", CONF_FAIL, "cannot read %s", path);
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        conf_add(r, 2, "exports one symbol", CONF_FAIL, "cannot map %s", path);
        return;
    }
    const ElfW(Ehdr) *eh = (const void *)m;
    const ElfW(Shdr) *sh = NULL;
    size_t shnum = eh->e_shnum;
    if (eh->e_shoff && eh->e_shentsize == sizeof *sh && eh->e_shoff < size &&
        shnum <= (size - eh->e_shoff) / sizeof *sh) {
        sh = (const void *)(m + eh->e_shoff);
    }
    char exported[512] = "", imported[512] = "", needed[256] = "";
    size_t n_exp = 0, n_imp = 0, n_need = 0;
    bool entry = false, read_any = false;
    for (size_t i = 0; sh && i < shnum; i++) {
        if ((sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_DYNAMIC) ||
            sh[i].sh_link >= shnum) {
            continue;
        }
        const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset ||
            strs->sh_offset > size || strs->sh_size > size - strs->sh_offset) {
            continue;
        }
        const char *str = (const char *)m + strs->sh_offset;
        size_t str_size = strs->sh_size;
        if (sh[i].sh_type == SHT_DYNAMIC) {
            const ElfW(Dyn) *dyn = (const void *)(m + sh[i].sh_offset);
            for (size_t k = 0; k < sh[i].sh_size / sizeof *dyn && dyn[k].d_tag != DT_NULL; k++) {
                if (dyn[k].d_tag == DT_NEEDED && dyn[k].d_un.d_val < str_size &&
                    strncmp(str + dyn[k].d_un.d_val, "libplexus", 9) == 0 &&
                    memchr(str + dyn[k].d_un.d_val, '\0', str_size - dyn[k].d_un.d_val)) {
                    list_add(needed, sizeof needed, &n_need, str + dyn[k].d_un.d_val);
                }
            }
            continue;
        }
        read_any = true;
        const ElfW(Sym) *sym = (const void *)(m + sh[i].sh_offset);
        for (size_t k = 1; k < sh[i].sh_size / sizeof *sym; k++) {
            if (sym[k].st_name >= str_size ||
                !memchr(str + sym[k].st_name, '\0', str_size - sym[k].st_name)) {
                continue;
            }
            const char *name = str + sym[k].st_name;
            unsigned bind = ELF64_ST_BIND(sym[k].st_info);
            unsigned vis = ELF64_ST_VISIBILITY(sym[k].st_other);
            if (!name[0] || (name[0] == '_' && name[1] == '_')) {
                continue;
            }
            if (sym[k].st_shndx == SHN_UNDEF) {
                if (strncmp(name, "plx_", 4) == 0) {
                    list_add(imported, sizeof imported, &n_imp, name);
                }
            } else if (sym[k].st_shndx != SHN_ABS &&
                       (bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE) &&
                       (vis == STV_DEFAULT || vis == STV_PROTECTED)) {
                if (strcmp(name, PLX_BACKEND_ENTRY_SYMBOL) == 0) {
                    entry = true;
                } else {
                    list_add(exported, sizeof exported, &n_exp, name);
                }
            }
        }
    }
    munmap((void *)m, size);
    if (!read_any) {
        conf_add(r, 2, "exports one symbol", CONF_NA,
                 "no dynamic symbol table in the section headers (stripped of them?)");
    } else if (n_exp || !entry) {
        conf_add(r, 2, "exports one symbol", CONF_FAIL,
                 "%zu symbols exported besides plx_backend_entry (%s): build with "
                 "-fvisibility=hidden", n_exp, exported);
    } else {
        conf_add(r, 2, "exports one symbol", CONF_PASS, "plx_backend_entry only");
    }
    if (n_need || n_imp) {
        conf_add(r, 3, "links nothing from libplexus", CONF_FAIL, "%s%s%s%s%s",
                 n_need ? "needs " : "", needed, n_need && n_imp ? "; " : "",
                 n_imp ? "uses " : "", imported);
    } else if (read_any) {
        conf_add(r, 3, "links nothing from libplexus", CONF_PASS,
                 "no libplexus among its needed libraries, no plx_ symbol taken from outside");
    }
}

/* ------------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------------ */

static void log_none(void *user_data, plx_log_level level, const char *source,
                     const char *message) {
    (void)user_data;
    (void)level;
    (void)source;
    (void)message;
}

/* Creates a runtime holding the plug-in alone, with `options`; `quiet`
 * drops its log (the option checks expect rejections). */
static plx_status alone(const char *path, const plx_backend_option *options, size_t count,
                        const plx_allocator *host_allocator, bool quiet, plx_runtime **out) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    const char *paths[1] = {path};
    o.search_paths = paths;
    o.search_path_count = 1;
    o.ignore_environment = true;
    o.skip_default_dir = true;
    o.backend_options = options;
    o.backend_option_count = count;
    o.log_fn = quiet ? log_none : log_quiet;
    o.host_allocator = host_allocator;
    return plx_runtime_create(&o, out);
}

/* The backend the runtime created, or the reason it has none. */
static const plx_backend_info *the_backend(plx_runtime *rt, const char **reason) {
    *reason = NULL;
    if (plx_runtime_backend_count(rt) > 0) {
        return plx_runtime_backend(rt, 0);
    }
    if (plx_runtime_rejection_count(rt) > 0) {
        *reason = plx_runtime_rejection(rt, 0)->reason;
    } else if (plx_runtime_skipped_count(rt) > 0) {
        *reason = plx_runtime_skipped(rt, 0)->reason;
    } else {
        *reason = "the file was not loaded (not a plug-in?)";
    }
    return NULL;
}

static void check_options(const char *path, const plx_backend_info *b, conf_report *r) {
    if (b->option_count == 0) {
        conf_add(r, 9, "option defaults accepted", CONF_NA, "the backend declares no option");
        conf_add(r, 9, "invalid option values refused", CONF_NA,
                 "the backend declares no option");
        return;
    }
    /* Every default at once. */
    plx_backend_option *opts = calloc(b->option_count, sizeof *opts);
    if (!opts) {
        r->out_of_memory = true;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < b->option_count; i++) {
        if (b->options[i].default_value) {
            opts[n++] = (plx_backend_option){b->id, b->options[i].key,
                                             b->options[i].default_value};
        }
    }
    plx_runtime *rt = NULL;
    plx_status s = alone(path, opts, n, NULL, true, &rt);
    const char *why = NULL;
    if (s) {
        conf_add(r, 9, "option defaults accepted", CONF_FAIL, "%s", plx_status_get_message(s));
        plx_status_free(s);
    } else if (n == 0) {
        conf_add(r, 9, "option defaults accepted", CONF_NA, "no option declares a default");
    } else if (!the_backend(rt, &why)) {
        conf_add(r, 9, "option defaults accepted", CONF_FAIL,
                 "created with every declared default given explicitly: %s", why);
    } else {
        conf_add(r, 9, "option defaults accepted", CONF_PASS,
                 "%zu declared defaults given explicitly: created", n);
    }
    plx_runtime_destroy(&rt);
    /* Values no option should take: each refused with the key named, or
     * accepted (a free-form option). */
    static const char *const bad[] = {"", "\x7fnot-a-value\x7f"};
    size_t refused = 0, accepted_any = 0;
    char fail[512] = "";
    for (size_t i = 0; i < b->option_count && !fail[0]; i++) {
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            plx_backend_option o = {b->id, b->options[i].key, bad[k]};
            rt = NULL;
            s = alone(path, &o, 1, NULL, true, &rt);
            if (s) {
                snprintf(fail, sizeof fail, "option '%s': %s", o.key, plx_status_get_message(s));
                plx_status_free(s);
                break;
            }
            if (the_backend(rt, &why)) {
                accepted_any++;
            } else if (!strstr(why, o.key)) {
                snprintf(fail, sizeof fail, "value '%s' of option '%s' refused without naming "
                         "the option: %s", bad[k][0] ? "(not a value)" : "", o.key, why);
            } else {
                refused++;
            }
            plx_runtime_destroy(&rt);
            if (fail[0]) {
                break;
            }
        }
    }
    if (fail[0]) {
        conf_add(r, 9, "invalid option values refused", CONF_FAIL, "%s", fail);
    } else if (refused == 0) {
        conf_add(r, 9, "invalid option values refused", CONF_NA,
                 "every option took an empty and a nonsense value (free-form options)");
    } else {
        conf_add(r, 9, "invalid option values refused", CONF_PASS,
                 "%zu bad values refused, each naming the option (%zu taken as free-form)",
                 refused, accepted_any);
    }
    free(opts);
}

/* ------------------------------------------------------------------------ */
/* Capabilities                                                        */
/* ------------------------------------------------------------------------ */

static void check_capabilities(const plx_backend_info *b, bool runs_layers, conf_report *r) {
    /* The core checked every key's type and range at load (it would have
     * rejected the plug-in); what is left is what capabilities need of
     * each other (R-10 (8), R-20, R-21). */
    struct {
        const char *cap;
        const char *needs;
        const char *alternative;
    } rules[] = {
        {PLX_CAP_ASYNC_EXECUTION, PLX_CAP_EXTERNALLY_MANAGED_MEMORY, NULL},
        {PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_CAP_IMPORT_MALLOC,
         PLX_CAP_ALLOCATES_PLANNED_MEMORY},
        {PLX_CAP_PREIMPORT_IO_TENSORS, PLX_CAP_IMPORT_MALLOC, PLX_CAP_IMPORT_DMA_BUF},
        {PLX_CAP_ALLOCATES_PLANNED_MEMORY, PLX_CAP_EXTERNALLY_MANAGED_MEMORY, NULL},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        if (plx_backend_info_has_capability(b, rules[i].cap) &&
            !plx_backend_info_has_capability(b, rules[i].needs) &&
            !(rules[i].alternative &&
              plx_backend_info_has_capability(b, rules[i].alternative))) {
            conf_add(r, 10, "capabilities consistent", CONF_FAIL,
                     "reports %s without %s%s%s, which it needs", rules[i].cap, rules[i].needs,
                     rules[i].alternative ? " or " : "",
                     rules[i].alternative ? rules[i].alternative : "");
            return;
        }
    }
    if (!runs_layers && b->capability_count) {
        for (size_t i = 0; i < b->capability_count; i++) {
            const char *k = b->capabilities[i].key;
            if (strcmp(k, PLX_CAP_ASYNC_EXECUTION) == 0 ||
                strcmp(k, PLX_CAP_EXTERNALLY_MANAGED_MEMORY) == 0 ||
                strcmp(k, PLX_CAP_QUEUED_EXECUTION) == 0) {
                conf_add(r, 10, "capabilities consistent", CONF_FAIL,
                         "reports %s but runs no layers", k);
                return;
            }
        }
    }
    conf_add(r, 10, "capabilities consistent", CONF_PASS,
             "%zu capabilities, typed and in range (checked by the core at load), none "
             "missing what it needs", b->capability_count);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct totals {
    size_t pass, fail, na;
} totals;

static totals count(const conf_report *r) {
    totals t = {0, 0, 0};
    for (size_t i = 0; i < r->count; i++) {
        if (r->checks[i].verdict == CONF_PASS) {
            t.pass++;
        } else if (r->checks[i].verdict == CONF_FAIL) {
            t.fail++;
        } else {
            t.na++;
        }
    }
    return t;
}

static void print_text(FILE *out, const conf_report *r, const char *id, const char *path,
                       double wall, int node_rc) {
    fprintf(out, "plexus conformance: %s (%s)\n", id ? id : "?", path);
    for (size_t i = 0; i < r->count; i++) {
        const conf_check *c = &r->checks[i];
        char tag[8];
        snprintf(tag, sizeof tag, "R-%d", c->requirement);
        fprintf(out, "%-5s  %-46s  %-4s  %s\n", tag, c->name, verdict_name(c->verdict),
                c->reason);
    }
    totals t = count(r);
    fprintf(out, "conformance %s: %zu passed, %zu failed, %zu not applicable (%.2f s)%s\n",
            id ? id : path, t.pass, t.fail, t.na, wall,
            node_rc < 0 ? "" : node_rc == 0 ? "; ONNX node tests passed"
                                            : "; ONNX node tests FAILED");
}

static void print_json(FILE *out, const conf_report *r, const char *id, const char *path,
                       double wall, int node_rc) {
    json_writer w;
    json_init(&w, out);
    json_begin_object(&w);
    json_key(&w, "backend");
    json_string(&w, id);
    json_key(&w, "path");
    json_string(&w, path);
    json_key(&w, "checks");
    json_begin_array(&w);
    for (size_t i = 0; i < r->count; i++) {
        const conf_check *c = &r->checks[i];
        char tag[8];
        snprintf(tag, sizeof tag, "R-%d", c->requirement);
        json_begin_object(&w);
        json_key(&w, "requirement");
        json_string(&w, tag);
        json_key(&w, "name");
        json_string(&w, c->name);
        json_key(&w, "result");
        json_string(&w, verdict_name(c->verdict));
        json_key(&w, "reason");
        json_string(&w, c->reason);
        json_end_object(&w);
    }
    json_end_array(&w);
    totals t = count(r);
    json_key(&w, "passed");
    json_int(&w, (int64_t)t.pass);
    json_key(&w, "failed");
    json_int(&w, (int64_t)t.fail);
    json_key(&w, "not_applicable");
    json_int(&w, (int64_t)t.na);
    json_key(&w, "onnx_node_tests");
    if (node_rc < 0) {
        json_null(&w);
    } else {
        json_string(&w, node_rc == 0 ? "passed" : "failed");
    }
    json_key(&w, "wall_s");
    json_double(&w, wall);
    json_end_object(&w);
    fputc('\n', out);
}

/* ------------------------------------------------------------------------ */
/* The command                                                                */
/* ------------------------------------------------------------------------ */

/* The ONNX node tests on this plug-in file alone (tools/node_tests.c, the
 * code of tests/conformance/run_conformance); their TAP goes to `tap`. Returns
 * their exit status, or prints why they cannot run and returns 1. */
static int run_node_tests(const conf_args *a, const char *path, FILE *tap) {
#ifdef PLX_HAVE_NODE_TESTS
    char **argv = calloc(6 + 2 * a->option_count, sizeof *argv);
    if (!argv) {
        return 1;
    }
    int n = 0;
    argv[n++] = (char *)"plexus conformance --onnx-node-tests";
    argv[n++] = (char *)"--backend-path";
    argv[n++] = (char *)path;
    char **opt_text = calloc(a->option_count + 1, sizeof *opt_text);
    for (size_t i = 0; opt_text && i < a->option_count; i++) {
        if (asprintf(&opt_text[i], "%s.%s=%s", a->options[i].backend_id, a->options[i].key,
                     a->options[i].value) < 0) {
            opt_text[i] = NULL;
            continue;
        }
        argv[n++] = (char *)"--option";
        argv[n++] = opt_text[i];
    }
    argv[n++] = (char *)a->node_tests;
    int rc = node_tests_run(n, argv, tap);
    for (size_t i = 0; opt_text && i < a->option_count; i++) {
        free(opt_text[i]);
    }
    free(opt_text);
    free(argv);
    return rc;
#else
    (void)a;
    (void)path;
    fputs("plexus conformance: --onnx-node-tests needs the ONNX importer, which this build "
          "of Plexus lacks\n", tap);
    return 1;
#endif
}

int cmd_conformance(int argc, char **argv) {
    conf_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) {
        free(a.options);
        return rc;
    }
    /* A target of a file has no id before loading; options name theirs. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *path = resolve_target(a.target);
    if (!path) {
        free(a.options);
        return EXIT_RUNTIME;
    }
    int node_rc = -1;
    if (a.node_tests) {
        /* First, before this process loads the plug-in: an OpenCL driver's
         * threads would not survive the runner's fork(). */
        fflush(stdout);
        node_rc = run_node_tests(&a, path, a.json ? stderr : stdout);
        fflush(a.json ? stderr : stdout);
    }
    conf_report report = {0};
    conf_alloc_counter counter;
    atomic_init(&counter.allocs, 0);
    atomic_init(&counter.frees, 0);
    atomic_init(&counter.live_bytes, 0);
    plx_allocator counting = conf_counting_allocator(&counter);
    plx_runtime *rt = NULL;
    plx_status s = alone(path, a.options, a.option_count, &counting, false, &rt);
    char *id = NULL;
    if (s) {
        fprintf(stderr, "plexus conformance: cannot create a runtime: %s\n",
                plx_status_get_message(s));
        plx_status_free(s);
        free(path);
        free(a.options);
        return EXIT_RUNTIME;
    }
    const char *why = NULL;
    const plx_backend_info *b = the_backend(rt, &why);
    if (!b) {
        /* The core's verdict is the check's. */
        int req = requirement_of_rejection(why, a.option_count > 0);
        conf_add(&report, req, "loads through discovery", CONF_FAIL, "%s", why);
        if (plx_runtime_rejection_count(rt) > 0 && plx_runtime_rejection(rt, 0)->id) {
            id = strdup(plx_runtime_rejection(rt, 0)->id);
        }
    } else {
        id = strdup(b->id);
        conf_add(&report, 2, "loads through discovery", CONF_PASS,
                 "'%s' %s (%s), ABI %u.%u; the core checked its descriptor, identity (R-8), "
                 "options (R-9) and capabilities (R-10)", b->id, b->version, b->name,
                 PLX_ABI_VERSION_GET_MAJOR(b->abi_version),
                 PLX_ABI_VERSION_GET_MINOR(b->abi_version));
        conf_add(&report, 5, "ABI negotiation", CONF_PASS,
                 "declares ABI %u.%u to a host of %u.%u (checked by the core)",
                 PLX_ABI_VERSION_GET_MAJOR(b->abi_version),
                 PLX_ABI_VERSION_GET_MINOR(b->abi_version), PLX_ABI_VERSION_MAJOR,
                 PLX_ABI_VERSION_MINOR);
        conf_add(&report, 8, "identity", CONF_PASS,
                 "id '%s', name '%s', version '%s' (checked by the core)", b->id, b->name,
                 b->version);
        if (!b->available) {
            conf_add(&report, 7, "available", CONF_NA,
                     "unavailable here: %s (nothing else can be checked on this machine)",
                     b->reason ? b->reason : "");
        } else {
            conf_add(&report, 7, "available", CONF_PASS, "created");
            bool runs_layers = false, optimizes = false;
            check_descriptor(path, &report, &runs_layers, &optimizes);
            check_symbols(path, &report);
            check_options(path, b, &report);
            check_capabilities(b, runs_layers, &report);
            conf_target t = {rt, b, &counter, runs_layers, optimizes,
                             a.tolerance_scale, a.verbose};
            conf_run_network_checks(&t, &report);
        }
    }
    bool was_available = b && b->available;
    size_t live_before_destroy = conf_alloc_live(&counter);
    plx_runtime_destroy(&rt);
    b = NULL; /* the runtime's */
    size_t live = conf_alloc_live(&counter);
    if (was_available) {
        if (live) {
            conf_add(&report, 13, "host memory freed at destroy", CONF_FAIL,
                     "%zu host allocations (%zu bytes) left after the backend was destroyed "
                     "(%zu before)", live, atomic_load(&counter.live_bytes),
                     live_before_destroy);
        } else {
            conf_add(&report, 13, "host memory freed at destroy", CONF_PASS,
                     "%zu host allocations, all freed", atomic_load(&counter.allocs));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (report.out_of_memory) {
        fputs("plexus conformance: out of memory\n", stderr);
        rc = EXIT_RUNTIME;
    } else {
        if (a.json) {
            print_json(stdout, &report, id, path, wall, node_rc);
        } else {
            print_text(stdout, &report, id, path, wall, node_rc);
        }
        rc = count(&report).fail == 0 && node_rc <= 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "plexus conformance: cannot write the output: %s\n", strerror(errno));
        rc = EXIT_RUNTIME;
    }
    report_free(&report);
    free(id);
    free(path);
    free(a.options);
    return rc;
}
