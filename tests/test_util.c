/* Helpers shared by the registry tests (test_util.h). */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

static void quiet_log(void *user_data, plx_log_level level, const char *source,
                      const char *message) {
    (void)user_data;
    const char *show = getenv("PLEXUS_TEST_LOG");
    if (show && *show && strcmp(show, "0") != 0) {
        fprintf(stderr, "plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
    }
}

void tu_options(plx_runtime_options *options) {
    plx_runtime_options_init(options);
    options->ignore_environment = true;
    options->skip_default_dir = true;
    options->log_level = PLX_LOG_DEBUG;
    options->log_fn = quiet_log;
}

plx_runtime *tu_create(const plx_runtime_options *options) {
    plx_runtime *rt = NULL;
    plx_status st = plx_runtime_create(options, &rt);
    if (st) {
        cr_log_error("plx_runtime_create: %s", plx_status_get_message(st));
        plx_status_free(st);
        cr_fatal("plx_runtime_create failed");
    }
    cr_assert(not(zero(ptr, rt)));
    return rt;
}

plx_runtime *tu_runtime(const char *const *paths, size_t count) {
    plx_runtime_options o;
    tu_options(&o);
    o.search_paths = paths;
    o.search_path_count = count;
    return tu_create(&o);
}

plx_runtime *tu_runtime_with(const char *path, const plx_backend_option *opts, size_t count) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {path};
    o.search_paths = paths;
    o.search_path_count = 1;
    o.backend_options = opts;
    o.backend_option_count = count;
    return tu_create(&o);
}

plx_runtime *tu_fake_runtime(void) {
    const char *paths[] = {FAKE_PLUGIN_DIR};
    return tu_runtime(paths, 1);
}

const char *tu_fake_path(char *buf, const char *name) {
    snprintf(buf, PATH_MAX, "%s/%s.so", FAKE_PLUGIN_DIR, name);
    return buf;
}

const char *tu_fake_realpath(char *buf, const char *name) {
    char path[PATH_MAX];
    tu_fake_path(path, name);
    if (!realpath(path, buf)) {
        cr_fatal("realpath(%s): %s (was the fake plug-in built?)", path, strerror(errno));
    }
    return buf;
}

const plx_rejection *tu_rejection_at(const plx_runtime *rt, const char *path) {
    size_t n = plx_runtime_rejection_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_rejection *r = plx_runtime_rejection(rt, i);
        if (r && r->path && strcmp(r->path, path) == 0) {
            return r;
        }
    }
    return NULL;
}

const plx_rejection *tu_fake_rejection(const plx_runtime *rt, const char *name) {
    char real[PATH_MAX];
    tu_fake_realpath(real, name);
    const plx_rejection *r = tu_rejection_at(rt, real);
    if (!r) {
        cr_fatal("no rejection recorded for %s\n%s", real, tu_dump(rt));
    }
    cr_assert(not(zero(ptr, (void *)r->reason)));
    return r;
}

const plx_rejection *tu_rejection_containing(const plx_runtime *rt, const char *needle) {
    size_t n = plx_runtime_rejection_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_rejection *r = plx_runtime_rejection(rt, i);
        if (r && r->reason && strstr(r->reason, needle)) {
            return r;
        }
    }
    return NULL;
}

const plx_rejection *tu_skipped_id(const plx_runtime *rt, const char *id) {
    size_t n = plx_runtime_skipped_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_rejection *r = plx_runtime_skipped(rt, i);
        if (r && r->id && strcmp(r->id, id) == 0) {
            return r;
        }
    }
    return NULL;
}

size_t tu_backend_id_count(const plx_runtime *rt, const char *id) {
    size_t n = plx_runtime_backend_count(rt), found = 0;
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(rt, i);
        if (b && b->id && strcmp(b->id, id) == 0) {
            found++;
        }
    }
    return found;
}

size_t tu_backend_index(const plx_runtime *rt, const char *id) {
    size_t n = plx_runtime_backend_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(rt, i);
        if (b && b->id && strcmp(b->id, id) == 0) {
            return i;
        }
    }
    return (size_t)-1;
}

bool tu_has_note(const plx_runtime *rt, const char *needle) {
    size_t n = plx_runtime_note_count(rt);
    for (size_t i = 0; i < n; i++) {
        const char *note = plx_runtime_note(rt, i);
        if (note && strstr(note, needle)) {
            return true;
        }
    }
    return false;
}

bool tu_noted(const plx_optimized_network *on, const char *needle) {
    for (size_t i = 0; i < plx_optimized_network_note_count(on); i++) {
        if (strstr(plx_optimized_network_note(on, i), needle)) {
            return true;
        }
    }
    return false;
}

plx_tensor_info tu_f32(uint32_t rank, const int64_t *dims) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = rank;
    for (uint32_t i = 0; i < rank && i < PLX_MAX_RANK; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

void tu_assert_good_fakes_loaded(const plx_runtime *rt) {
    static const char *const ids[] = {"fake_good", "fake_zulu"};
    static const char *const files[] = {"fake_good", "fake_first"};
    for (size_t i = 0; i < 2; i++) {
        const plx_backend_info *b = plx_runtime_find_backend(rt, ids[i]);
        cr_assert(not(zero(ptr, (void *)b)), "good fake '%s' beside a broken one did not load\n%s",
                  ids[i], tu_dump(rt));
        cr_assert(b->available, "good fake '%s' is unavailable: %s", ids[i],
                  b->reason ? b->reason : "(no reason)");
        char real[PATH_MAX];
        tu_fake_realpath(real, files[i]);
        cr_assert(not(zero(ptr, (void *)b->path)));
        cr_assert(eq(str, (char *)b->path, real));
    }
}

/* Appends to the dump buffer; output beyond its size is cut. */
static void dump_add(char *buf, size_t size, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void dump_add(char *buf, size_t size, size_t *used, const char *fmt, ...) {
    if (*used >= size - 1) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, size - *used, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *used += (size_t)n < size - *used ? (size_t)n : size - 1 - *used;
    }
}

const char *tu_dump(const plx_runtime *rt) {
    static char buf[32768];
    size_t used = 0;
    buf[0] = '\0';
    if (!rt) {
        return "(no runtime)";
    }
    size_t n = plx_runtime_search_path_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_search_entry *e = plx_runtime_search_path(rt, i);
        dump_add(buf, sizeof buf, &used, "search[%zu]: %s (%s) problem='%s'\n", i, e->path,
                 plx_search_source_name(e->source), e->problem ? e->problem : "(null)");
    }
    n = plx_runtime_backend_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(rt, i);
        dump_add(buf, sizeof buf, &used,
                 "backend[%zu]: %s path=%s available=%d reason=%s caps=%zu\n", i, b->id,
                 b->path ? b->path : "(null)", b->available, b->reason ? b->reason : "(null)",
                 b->capability_count);
    }
    n = plx_runtime_rejection_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_rejection *r = plx_runtime_rejection(rt, i);
        dump_add(buf, sizeof buf, &used, "rejection[%zu]: path=%s id=%s reason=%s\n", i,
                 r->path ? r->path : "(null)", r->id ? r->id : "(null)", r->reason);
    }
    n = plx_runtime_skipped_count(rt);
    for (size_t i = 0; i < n; i++) {
        const plx_rejection *r = plx_runtime_skipped(rt, i);
        dump_add(buf, sizeof buf, &used, "skipped[%zu]: path=%s id=%s reason=%s\n", i,
                 r->path ? r->path : "(null)", r->id ? r->id : "(null)", r->reason);
    }
    n = plx_runtime_note_count(rt);
    for (size_t i = 0; i < n; i++) {
        dump_add(buf, sizeof buf, &used, "note[%zu]: %s\n", i, plx_runtime_note(rt, i));
    }
    return buf;
}

const char *tu_mkdtemp(char *buf) {
    char tmpl[] = "/tmp/plexus-test-XXXXXX";
    if (!mkdtemp(tmpl)) {
        cr_fatal("mkdtemp: %s", strerror(errno));
    }
    /* World-searchable, for the test that drops privileges. */
    cr_assert(eq(int, chmod(tmpl, 0755), 0));
    if (!realpath(tmpl, buf)) {
        cr_fatal("realpath(%s): %s", tmpl, strerror(errno));
    }
    return buf;
}

void tu_rmtree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        char path[PATH_MAX];
        tu_join(path, dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            tu_rmtree(path);
        } else {
            unlink(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

const char *tu_join(char *buf, const char *dir, const char *name) {
    snprintf(buf, PATH_MAX, "%s/%s", dir, name);
    return buf;
}

void tu_symlink(const char *target, const char *dir, const char *name) {
    char path[PATH_MAX];
    tu_join(path, dir, name);
    if (symlink(target, path) != 0) {
        cr_fatal("symlink(%s, %s): %s", target, path, strerror(errno));
    }
}

void tu_link_fake(const char *dir, const char *fake, const char *link_name) {
    char target[PATH_MAX];
    tu_fake_realpath(target, fake);
    tu_symlink(target, dir, link_name);
}

void tu_write_file(const char *dir, const char *name, const void *data, size_t size,
                   unsigned mode) {
    char path[PATH_MAX];
    tu_join(path, dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        cr_fatal("open(%s): %s", path, strerror(errno));
    }
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            close(fd);
            cr_fatal("write(%s): %s", path, strerror(errno));
        }
        p += n;
        size -= (size_t)n;
    }
    close(fd);
    cr_assert(eq(int, chmod(path, (mode_t)mode), 0));
}

void tu_copy_file(const char *src, const char *dir, const char *name) {
    FILE *f = fopen(src, "rb");
    if (!f) {
        cr_fatal("fopen(%s): %s", src, strerror(errno));
    }
    char *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(data, cap);
            cr_assert(not(zero(ptr, grown)));
            data = grown;
        }
        size_t n = fread(data + size, 1, cap - size, f);
        if (n == 0) {
            break;
        }
        size += n;
    }
    fclose(f);
    tu_write_file(dir, name, data, size, 0755);
    free(data);
}

void tu_backend_options(const char *id, const char *const *options, size_t count,
                        plx_backend_option *opts, tu_option_key *keys, size_t max) {
    cr_assert(le(sz, count, max));
    for (size_t i = 0; i < count; i++) {
        const char *eq = strchr(options[i], '=');
        cr_assert(not(zero(ptr, (void *)eq)), "option '%s' has no '='", options[i]);
        snprintf(keys[i], sizeof keys[i], "%.*s", (int)(eq - options[i]), options[i]);
        opts[i].backend_id = id;
        opts[i].key = keys[i];
        opts[i].value = eq + 1;
    }
}

const plx_backend_info *tu_require_backend(plx_runtime **rt, const char *id,
                                           const char *require_var) {
    const plx_backend_info *b = plx_runtime_find_backend(*rt, id);
    cr_assert(not(zero(ptr, (void *)b)), "%s was not loaded: %s", id, tu_dump(*rt));
    if (!b->available) {
        char reason[1024];
        snprintf(reason, sizeof reason, "%s", b->reason ? b->reason : "(no reason)");
        plx_runtime_destroy(rt);
        const char *v = getenv(require_var);
        if (v && strcmp(v, "1") == 0) {
            cr_fatal("%s=1, but %s is unavailable: %s", require_var, id, reason);
        }
        cr_skip_test("%s is unavailable: %s", id, reason);
    }
    return b;
}

void tu_trace_text(plx_runtime *rt, char *buf, size_t size) {
    char dir[4096], path[4096];
    tu_mkdtemp(dir);
    tu_join(path, dir, "trace.json");
    plx_status s = plx_runtime_write_trace(rt, path);
    cr_assert(zero(ptr, s), "plx_runtime_write_trace: %s", plx_status_get_message(s));
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t got = fread(buf, 1, size - 1, f);
        buf[got] = '\0';
        fclose(f);
    }
    tu_rmtree(dir);
}

bool tu_under_asan(void) {
#if defined(__SANITIZE_ADDRESS__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return true;
#else
    return false;
#endif
#else
    return false;
#endif
}

bool tu_under_valgrind(void) {
    const char *v = getenv("PLEXUS_TEST_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

plx_network *tu_layer_network(plx_op op, const void *desc, const plx_tensor_info *infos,
                              const void *const *data, uint32_t input_count,
                              const plx_activation_desc *act, plx_tensor_info *out_y) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id layer, y, x, a;
    OK(plx_network_add_input(n, "x", 0, &infos[0], &x));
    OK(plx_network_add_layer(n, "layer", op, desc, input_count, 1, &layer));
    OK(plx_network_connect(n, x, 0, layer, 0));
    for (uint32_t i = 1; i < input_count; i++) {
        char name[16];
        plx_layer_id c;
        snprintf(name, sizeof name, "const%u", i);
        OK(plx_network_add_constant(n, name, &infos[i], data[i], PLX_CONSTANT_BORROW, &c));
        OK(plx_network_connect(n, c, 0, layer, i));
    }
    OK(plx_network_add_output(n, "y", 0, &y));
    if (act) {
        OK(plx_network_add_layer(n, "activation", PLX_OP_ACTIVATION, act, 1, 1, &a));
        OK(plx_network_connect(n, layer, 0, a, 0));
        OK(plx_network_connect(n, a, 0, y, 0));
    } else {
        OK(plx_network_connect(n, layer, 0, y, 0));
    }
    OK(plx_network_validate(n));
    OK(plx_network_output_info(n, layer, 0, out_y));
    return n;
}

plx_loaded_network *tu_load_on(plx_runtime *rt, plx_network *n, const char *id, char *summary,
                               size_t summary_size) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *ids[] = {id};
    oo.backends = ids;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    if (summary) {
        snprintf(summary, summary_size, "%s", plx_optimized_network_summary(on));
    }
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    return ln;
}

void tu_run_network_on(plx_runtime *rt, plx_network *n, const char *id, const float *x,
                       size_t x_bytes, float *y, size_t y_bytes, char *summary,
                       size_t summary_size) {
    plx_loaded_network *ln = tu_load_on(rt, n, id, summary, summary_size);
    plx_tensor_binding in = {0, (void *)x, x_bytes, 0}, out = {0, y, y_bytes, 0};
    plx_execute_args args;
    plx_execute_args_init(&args);
    args.inputs = &in;
    args.input_count = 1;
    args.outputs = &out;
    args.output_count = 1;
    OK(plx_loaded_network_execute_with(ln, NULL, &args));
    plx_loaded_network_unload(&ln);
}

void tu_run_layer(plx_runtime *rt, const char *backend, plx_op op, const void *desc,
                  const tu_input *ins, uint32_t n_in, uint32_t n_out, plx_tensor_info *infos,
                  void **outs) {
    enum { MAX_SLOTS = 16 };
    cr_assert(le(u32, n_in, MAX_SLOTS));
    cr_assert(le(u32, n_out, MAX_SLOTS));
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id layer;
    OK(plx_network_add_layer(n, "op", op, desc, n_in, n_out, &layer));
    plx_tensor_binding bind_in[MAX_SLOTS], bind_out[MAX_SLOTS];
    memset(bind_in, 0, sizeof bind_in);
    memset(bind_out, 0, sizeof bind_out);
    for (uint32_t i = 0; i < n_in; i++) {
        plx_tensor_info t;
        memset(&t, 0, sizeof t);
        t.dtype = ins[i].dtype;
        t.rank = ins[i].rank;
        for (uint32_t k = 0; k < t.rank; k++) {
            t.dims[k] = ins[i].dims[k];
        }
        char name[16];
        snprintf(name, sizeof name, "in%u", i);
        plx_layer_id id;
        OK(plx_network_add_input(n, name, (int32_t)i, &t, &id));
        OK(plx_network_connect(n, id, 0, layer, i));
        size_t bytes = 0;
        cr_assert(plx_tensor_info_byte_size(&t, &bytes));
        bind_in[i].binding_id = (int32_t)i;
        bind_in[i].data = (void *)ins[i].data;
        bind_in[i].size = bytes;
    }
    for (uint32_t j = 0; j < n_out; j++) {
        char name[16];
        snprintf(name, sizeof name, "out%u", j);
        plx_layer_id id;
        OK(plx_network_add_output(n, name, (int32_t)j, &id));
        OK(plx_network_connect(n, layer, j, id, 0));
    }
    plx_loaded_network *ln = tu_load_on(rt, n, backend, NULL, 0);
    for (uint32_t j = 0; j < n_out; j++) {
        OK(plx_loaded_network_output_info(ln, (int32_t)j, &infos[j]));
        size_t bytes = 0;
        cr_assert(plx_tensor_info_byte_size(&infos[j], &bytes));
        outs[j] = malloc(bytes ? bytes : 1);
        cr_assert(not(zero(ptr, outs[j])));
        bind_out[j].binding_id = (int32_t)j;
        bind_out[j].data = outs[j];
        bind_out[j].size = bytes;
    }
    OK(plx_loaded_network_execute(ln, bind_in, n_in, bind_out, n_out));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
}
